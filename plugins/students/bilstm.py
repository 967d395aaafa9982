import dataclasses
from typing import ClassVar
from typing import Literal
from typing import Optional

import kdplug
from kdplug.config import Fraction
from kdplug.config import PositiveInt
from kdplug.errors import KdplugError
from kdplug.students import teacher_attribute


class BiLstmStudent(kdplug.StudentKind):
    """Tang et al.'s single-layer BiLSTM, its final states, MLP head.

    Taps: `pooled` and `logits` only, so use it with logit-level methods
    (KD, logit MSE); attention or hidden-state terms raise a `KdplugError`.

    Config:
        input: `token_ids` (the teacher's WordPiece ids) or `word_ids` (ids
            from `kdplug.models.WordTokenizer`).
        vocabulary_size: required for `word_ids` (the tokenizer's
            `vocabulary_size`); None takes the teacher's for `token_ids`.
        embedding_dim: embedding width.
        lstm_units: units per direction.
        hidden_dim: width of the ReLU layer before the classifier.
        dropout: dropout rate.
        pooling: the sentence vector: `final_states` (default, Tang et
            al.'s encoder: `[f_last; b_first]`, the forward LSTM's state
            after the last real token and the backward LSTM's after the
            first) or `max` (max-pooling over time: kdplug 0.1's student).

    Examples:

    ```yaml
    student:
      kind: bilstm
      lstm_units: 128
      pooling: final_states   # max: kdplug 0.1's encoder
    ```
    """

    name = "bilstm"
    description = "single-layer BiLSTM (final states) + MLP (Tang et al. 2019)"
    siamese: ClassVar[bool] = False
    table_variants = ({}, {"input": "word_ids", "vocabulary_size": 20000})

    @dataclasses.dataclass
    class Config:
        input: Literal["token_ids", "word_ids"] = "token_ids"
        vocabulary_size: Optional[PositiveInt] = None
        embedding_dim: PositiveInt = 128
        lstm_units: PositiveInt = 128
        hidden_dim: PositiveInt = 256
        dropout: Fraction = 0.1
        pooling: Literal["final_states", "max"] = "final_states"

    def build(self, teacher, num_classes):
        from kdplug.students import bilstm

        cfg = self.config
        vocabulary_size = cfg.vocabulary_size
        if vocabulary_size is None:
            if cfg.input == "word_ids":
                raise KdplugError(
                    f"student kind {self.name!r}: vocabulary_size is required "
                    "with input: word_ids (the WordTokenizer's vocabulary_size)"
                )
            vocabulary_size = teacher_attribute(teacher, "vocabulary_size",
                                                option="vocabulary_size")
        options = dataclasses.asdict(cfg)  # bilstm()'s keyword arguments
        options["vocabulary_size"] = vocabulary_size
        return bilstm(num_classes=num_classes, siamese=self.siamese, **options)
