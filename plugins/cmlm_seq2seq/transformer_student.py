import dataclasses

from kdplug.config import Fraction
from kdplug.config import PositiveInt
from kdplug.errors import ConfigError
from kdplug_plugins.cmlm_seq2seq.seq2seq_student_kind import Seq2SeqStudentKind


class Seq2SeqTransformerStudent(Seq2SeqStudentKind):
    """`student.kind: seq2seq-transformer`: a Transformer encoder-decoder
    (`Seq2SeqTransformer`) on the teacher's word-piece vocabulary, with its
    embeddings tied to its output layer.

    The paper's students are Transformer-base models (6 + 6 layers, width
    512); the defaults here are a smaller model that trains on a CPU-sized
    budget; set the sizes for a larger one. A sequence-to-sequence student
    is built by `cmlm-seq2seq` (`build_seq2seq`); other methods, which
    train classifiers, get a `ConfigError`.

    Config:
        hidden_dim: model width.
        num_encoder_layers, num_decoder_layers: layers per side.
        num_heads: attention heads (divides `hidden_dim`).
        intermediate_dim: feed-forward width.
        dropout: dropout rate.

    Examples:

    ```yaml
    student:
      kind: seq2seq-transformer
      hidden_dim: 256
      num_encoder_layers: 3
      num_decoder_layers: 3
    ```
    """

    name = "seq2seq-transformer"
    description = "Transformer encoder-decoder, tied word-piece embeddings (seq2seq)"

    @dataclasses.dataclass
    class Config:
        hidden_dim: PositiveInt = 256
        num_encoder_layers: PositiveInt = 3
        num_decoder_layers: PositiveInt = 3
        num_heads: PositiveInt = 4
        intermediate_dim: PositiveInt = 1024
        dropout: Fraction = 0.1

        def __post_init__(self):
            if self.hidden_dim % self.num_heads:
                raise ConfigError(f"must be a multiple of num_heads ({self.num_heads})",
                                  field="hidden_dim", value=self.hidden_dim)

    def model_class(self):
        from kdplug_plugins.cmlm_seq2seq.seq2seq_transformer import Seq2SeqTransformer

        return Seq2SeqTransformer
