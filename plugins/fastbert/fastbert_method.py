import dataclasses
from typing import Annotated
from typing import List
from typing import Literal
from typing import Optional

import kdplug
from kdplug.config import Fraction
from kdplug.config import Items
from kdplug.config import PositiveInt
from kdplug.config import Probability
from kdplug.errors import ConfigError

# The speed thresholds the curve is measured at by default (`curve_speeds`).
DEFAULT_SPEEDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def freeze_backbone(student):
    """Stage selector: freezes the copied BERT (backbone, pooler, final
    classifier) so only the exit branches train."""
    student.bert.trainable = False
    for branch in student.branches:
        branch.trainable = True


class FastBERTMethod(kdplug.Method):
    """FastBERT: self-distillation of exit branches, then adaptive inference.

    The student is the fine-tuned teacher itself: `build_student` copies the
    teacher's backbone and final classifier into an
    `EarlyExitBertClassifier` and adds an exit branch after every layer but
    the last (the configured `student` section is ignored). One stage,
    `self_distill`, freezes the copied part and trains the branches with
    `sum_i KL(p_final || p_i)` (`BranchSelfDistillation`), reading the final
    classifier's distribution from the student's own taps, so no teacher
    forward pass (and no teacher-output cache) is needed and labels are not
    used. At inference time `student.predict_adaptive(inputs, speed)` exits
    each example at the first branch whose normalised entropy is below
    `speed`; `kdplug_plugins.fastbert.speed_curve` sweeps `speed`.

    Config:
        branch_dim: width of each branch (default: hidden size; the paper 128).
        branch_dropout: dropout inside the branches.
        branch_pooling: `attention` (the paper's branch: one self-attention
            layer read at [CLS]), `cls` (a head on the [CLS] state only) or
            `mean` (that head on the mean of the layer's real tokens; the
            final classifier pools as the teacher, `teacher.pooling`).
        branch_heads: attention heads per branch.
        branch_form: `paper` (the paper's branch: `tanh` after the
            projection, the attention output at [CLS] without a residual) or
            `residual` (kdplug 0.1: no tanh after the projection, a residual
            around the attention); attention pooling only (`ExitBranch`).
        weight: weight of the self-distillation loss.
        data: `unlabelled` (labels ignored, as in the paper) or `task`.
        curve_speeds: the exit thresholds the report's speed curve sweeps.
        curve_batch_sizes: batch sizes its throughput is measured at (null:
            the evaluation batches, `max(training.batch_size, 64)`).
        curve_rounds: timed passes per threshold (interleaved; the fastest
            counts).

    Examples:

    ```yaml
    method:
      name: fastbert
      branch_dim: 128
      branch_form: paper   # residual: kdplug 0.1's branch
    ```
    """

    name = "fastbert"
    description = "FastBERT self-distilled exit branches + adaptive inference"
    default_student = {"kind": "truncated"}

    @dataclasses.dataclass
    class Config:
        branch_dim: Optional[PositiveInt] = None
        branch_dropout: Fraction = 0.1
        branch_pooling: Literal["attention", "cls", "mean"] = "attention"
        branch_heads: PositiveInt = 2
        branch_form: Literal["paper", "residual"] = "paper"
        weight: float = 1.0
        data: Literal["unlabelled", "task"] = "unlabelled"
        curve_speeds: Annotated[List[Probability],
                                Items(min=1, noun="exit threshold")] = dataclasses.field(
            default_factory=lambda: list(DEFAULT_SPEEDS))
        curve_batch_sizes: Optional[List[PositiveInt]] = None
        curve_rounds: PositiveInt = 1

        def __post_init__(self):
            if self.branch_heads >= 1 and (self.branch_dim or 0) % self.branch_heads:
                raise ConfigError(
                    f"must divide branch_dim ({self.branch_dim})",
                    field="branch_heads", value=self.branch_heads)

    def build_student(self, teacher, student_kind, num_classes):
        """The EarlyExit model built from the fine-tuned teacher's weights;
        `student_kind` is ignored."""
        from kdplug_plugins.fastbert.early_exit_bert import early_exit_bert

        return early_exit_bert(
            teacher, num_classes,
            branch_dim=self.config.branch_dim,
            branch_dropout=self.config.branch_dropout,
            branch_pooling=self.config.branch_pooling,
            branch_heads=self.config.branch_heads,
            branch_form=self.config.branch_form,
        )

    def stages(self, teacher, student):
        from kdplug_plugins.fastbert.branch_self_distillation import (
            BranchSelfDistillation,
        )

        term = BranchSelfDistillation(
            student.branch_tap_names(), weight=self.config.weight
        )
        return [
            kdplug.Stage(
                "self_distill", [term], trainable=freeze_backbone,
                data=self.config.data,
            )
        ]

    def evaluate(self, student, test_ds, run_dir):
        """The speed curve: threshold vs accuracy vs layers vs examples/s."""
        from kdplug_plugins.fastbert.speed_curve import fastbert_curve

        cfg = self.config
        curve = fastbert_curve(
            student, test_ds, speeds=cfg.curve_speeds, output_dir=run_dir,
            batch_sizes=cfg.curve_batch_sizes, rounds=cfg.curve_rounds)
        return {"fastbert_curve": curve}
