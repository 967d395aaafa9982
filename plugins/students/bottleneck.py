import dataclasses
from typing import Literal
from typing import Optional

import kdplug
from kdplug.config import Fraction
from kdplug.config import PositiveInt
from kdplug.students import teacher_attribute


class BottleneckStudent(kdplug.StudentKind):
    """A MobileBERT-style student: teacher-wide between blocks, narrow inside.

    The inter-block width is the teacher's hidden size and, by default, the
    depth is the teacher's, so `hidden/<i>` pairs with the teacher's
    `hidden/<i>` without a projection. Inside each block a linear bottleneck
    narrows to `intra_dim`, attention and several stacked feed-forward
    networks run there, and a linear bottleneck widens back. The pooler
    reads the sentence the teacher's way (`teacher.pooling`: [CLS] or the
    mean of every real token).

    Config:
        preset: `default` (MobileBERT's proportions: intra 128, FFN 512, 4
            heads, 4 FFNs, 128-wide trigram embeddings) or `tiny` (intra 64,
            FFN 256, 4 heads, 2 FFNs, 64-wide embeddings).
        num_layers: None takes the teacher's depth.
        intra_dim, num_heads, intermediate_dim, num_feedforward,
        embedding_dim: override the preset's value when set.
        dropout: dropout rate.

    Examples:

    ```yaml
    student:
      kind: bottleneck
      preset: tiny
    ```
    """

    name = "bottleneck"
    description = "MobileBERT-style bottleneck BERT (teacher-wide between blocks)"
    table_variants = ({}, {"preset": "tiny"})

    @dataclasses.dataclass
    class Config:
        preset: Literal["default", "tiny"] = "default"
        num_layers: Optional[PositiveInt] = None
        intra_dim: Optional[PositiveInt] = None
        num_heads: Optional[PositiveInt] = None
        intermediate_dim: Optional[PositiveInt] = None
        num_feedforward: Optional[PositiveInt] = None
        embedding_dim: Optional[PositiveInt] = None
        dropout: Fraction = 0.1

    def build(self, teacher, num_classes):
        from kdplug.students import bottleneck_bert

        cfg = self.config
        return bottleneck_bert(
            vocabulary_size=teacher_attribute(teacher, "vocabulary_size"),
            num_classes=num_classes,
            hidden_dim=teacher_attribute(teacher, "hidden_dim"),
            num_layers=cfg.num_layers or teacher_attribute(teacher, "num_layers",
                                                            option="num_layers"),
            preset=cfg.preset,
            max_sequence_length=teacher_attribute(teacher, "max_sequence_length"),
            num_segments=teacher_attribute(teacher, "num_segments"),
            dropout=cfg.dropout,
            intra_dim=cfg.intra_dim,
            num_heads=cfg.num_heads,
            intermediate_dim=cfg.intermediate_dim,
            num_feedforward=cfg.num_feedforward,
            embedding_dim=cfg.embedding_dim,
            pooling=getattr(teacher, "pooling", "cls"),
        )
