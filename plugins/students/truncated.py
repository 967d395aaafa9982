import dataclasses
from typing import Literal
from typing import Optional
from typing import Union

import kdplug
from kdplug.config import Fraction
from kdplug.config import PositiveInt


class TruncatedStudent(kdplug.StudentKind):
    """A shallower copy of the teacher initialised from chosen teacher layers,
    of the teacher's own family (BERT, DistilBERT, RoBERTa, XLM-RoBERTa,
    ALBERT, ELECTRA, DeBERTaV3: `kdplug.students.truncated_hub`).

    Embeddings, the chosen transformer layers and the pooler are copied from
    the teacher. `init` says from which of its states:

    - `teacher` (the kind's default): the fine-tuned teacher as the run
      holds it, classifier head included (when the class count matches).
    - `pretrained`: the teacher as loaded from `teacher.source`, before
      `teacher.finetune`, with a freshly initialised classifier head: the
      papers' recipe (PKD, Sun et al. 2019: "initialised with the first k
      layers of the pre-trained BERT"; DistilBERT, Sanh et al. 2019: "taking
      one layer out of two" of the pre-trained teacher), and the default of
      the `pkd` and `distilbert` methods. The runner keeps a host copy of
      the teacher's weights before fine-tuning for it
      (`StudentKind.needs_pretrained_weights`).

    Without `teacher.finetune` both start from the same layers; only the
    head differs (copied vs new). The student pools its sentence as the
    teacher does (`teacher.pooling`).

    Config:
        layers: `every_other` (DistilBERT), `first_k` (PKD) or a list of
            0-based teacher layer indices.
        num_layers: student depth for `first_k` / `every_other`.
        dropout: dropout rate of the student.
        init: `teacher` (fine-tuned layers and head) or `pretrained`
            (pre-trained layers, new head).

    Examples:

    ```yaml
    student:
      kind: truncated
      layers: first_k
      num_layers: 3
      init: pretrained
    ```
    """

    name = "truncated"
    description = "the teacher's family with fewer layers, copied from the teacher"
    table_variants = ({"layers": "every_other"}, {"layers": "first_k", "num_layers": 2})

    @dataclasses.dataclass
    class Config:
        layers: Union[str, list] = "every_other"
        num_layers: Optional[PositiveInt] = None
        dropout: Fraction = 0.1
        init: Literal["teacher", "pretrained"] = "teacher"

    @property
    def needs_pretrained_weights(self):
        return self.config.init == "pretrained"

    def build(self, teacher, num_classes):
        from kdplug.errors import KdplugError
        from kdplug.models import HubTextClassifier
        from kdplug.students import select_layers
        from kdplug.students import truncated_bert
        from kdplug.students import truncated_hub

        cfg = self.config
        layers = select_layers(cfg.layers, teacher.num_layers, cfg.num_layers)
        # BERT's own classifier, or the teacher's keras-hub family
        build = truncated_hub if isinstance(teacher, HubTextClassifier) else truncated_bert
        if cfg.init == "teacher":
            return build(teacher, layers, num_classes, dropout=cfg.dropout)
        if self.pretrained_weights is None:
            raise KdplugError(
                "student.init: pretrained needs the teacher's weights from before "
                "fine-tuning; the runner sets them (TeacherSetup.keep_pretrained), "
                "code that builds the student itself sets "
                "kind.pretrained_weights = PretrainedWeights(teacher) before "
                "fine-tuning the teacher")
        return build(teacher, layers, num_classes, copy_head=False,
                     dropout=cfg.dropout, pretrained=self.pretrained_weights)
