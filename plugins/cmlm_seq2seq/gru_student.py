import dataclasses

from kdplug.config import Fraction
from kdplug.config import PositiveInt
from kdplug_plugins.cmlm_seq2seq.seq2seq_student_kind import Seq2SeqStudentKind


class Seq2SeqGruStudent(Seq2SeqStudentKind):
    """`student.kind: seq2seq-gru`: a bidirectional-GRU encoder, a GRU
    decoder with dot-product attention (`Seq2SeqGru`), on the teacher's
    word-piece vocabulary with tied embeddings. Built by `cmlm-seq2seq`
    only (`build_seq2seq`).

    Config:
        embedding_dim: word-piece embedding width.
        units: GRU units (per direction in the encoder).
        dropout: dropout rate.

    Examples:

    ```yaml
    student:
      kind: seq2seq-gru
      units: 256
    ```
    """

    name = "seq2seq-gru"
    description = "BiGRU encoder, GRU decoder with attention (seq2seq)"

    @dataclasses.dataclass
    class Config:
        embedding_dim: PositiveInt = 256
        units: PositiveInt = 256
        dropout: Fraction = 0.1

    def model_class(self):
        from kdplug_plugins.cmlm_seq2seq.seq2seq_gru import Seq2SeqGru

        return Seq2SeqGru
