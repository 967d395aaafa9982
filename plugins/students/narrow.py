import dataclasses
from typing import Optional

import kdplug
from kdplug.config import Fraction
from kdplug.config import PositiveInt
from kdplug.errors import ConfigError
from kdplug.students import teacher_attribute


class NarrowStudent(kdplug.StudentKind):
    """A randomly initialised narrow, shallow BERT (TinyBERT-style).

    Same WordPiece vocabulary and inputs as the teacher; every width is
    configurable. Layer-wise terms need a projection where `hidden_dim`
    differs from the teacher's (`kdplug.mapping.projection_builder`). Its
    head classifies as the teacher's does: per token or per sentence, the
    sentence pooled the teacher's way (`teacher.pooling`).

    Config:
        num_layers: transformer layers (TinyBERT-4: 4).
        hidden_dim: hidden size (312), divisible by `num_heads`.
        intermediate_dim: feed-forward size (1200).
        num_heads: attention heads (12).
        max_sequence_length: position-embedding size; None takes the
            teacher's.
        dropout: dropout rate.

    Examples:

    ```yaml
    student:
      kind: narrow
      num_layers: 4
      hidden_dim: 312
    ```
    """

    name = "narrow"
    description = "randomly initialised narrow BERT (TinyBERT-4 shape)"

    @dataclasses.dataclass
    class Config:
        num_layers: PositiveInt = 4
        hidden_dim: PositiveInt = 312
        intermediate_dim: PositiveInt = 1200
        num_heads: PositiveInt = 12
        max_sequence_length: Optional[PositiveInt] = None
        dropout: Fraction = 0.1

        def __post_init__(self):
            if self.hidden_dim % self.num_heads:
                raise ConfigError(f"must be divisible by num_heads ({self.num_heads})",
                                  field="hidden_dim", value=self.hidden_dim)

    def build(self, teacher, num_classes):
        from kdplug.students import narrow_bert

        cfg = self.config
        return narrow_bert(
            vocabulary_size=teacher_attribute(teacher, "vocabulary_size"),
            num_classes=num_classes,
            num_layers=cfg.num_layers,
            hidden_dim=cfg.hidden_dim,
            intermediate_dim=cfg.intermediate_dim,
            num_heads=cfg.num_heads,
            max_sequence_length=(
                cfg.max_sequence_length
                or teacher_attribute(teacher, "max_sequence_length",
                                     option="max_sequence_length")
            ),
            num_segments=teacher_attribute(teacher, "num_segments"),
            dropout=cfg.dropout,
            per_token=getattr(teacher, "per_token", False),
            pooling=getattr(teacher, "pooling", "cls"),
        )
