import dataclasses
from typing import Optional
from typing import Union

import kdplug
from kdplug.config.ranges import Fraction
from kdplug.config.ranges import PositiveInt


class TruncatedStudent(kdplug.StudentKind):
    """A shallower BERT initialised from chosen teacher layers.

    Config:
        layers: `every_other` (DistilBERT), `first_k` (PKD) or a list of
            0-based teacher layer indices.
        num_layers: student depth for `first_k` / `every_other`.
        dropout: dropout rate of the student.

    Examples:

    ```yaml
    student:
      kind: truncated
      layers: [0, 2, 4]
    ```
    """

    name = "truncated"
    description = "BERT with fewer layers, copied from the teacher"
    table_variants = ({"layers": "every_other"}, {"layers": "first_k", "num_layers": 2})

    @dataclasses.dataclass
    class Config:
        layers: Union[str, list] = "every_other"
        num_layers: Optional[PositiveInt] = None
        dropout: Fraction = 0.1

    def build(self, teacher, num_classes):
        from kdplug.students import select_layers
        from kdplug.students import truncated_bert

        cfg = self.config
        layers = select_layers(cfg.layers, teacher.num_layers, cfg.num_layers)
        return truncated_bert(teacher, layers, num_classes, dropout=cfg.dropout)
