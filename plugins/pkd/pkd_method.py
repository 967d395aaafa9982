import dataclasses
from typing import Literal

import kdplug
from kdplug.config import MappingRef
from kdplug.config import NonNegativeFloat
from kdplug.config import PositiveFloat
from kdplug.config import Probability


class PKDMethod(kdplug.Method):
    """Patient KD: `(1 - alpha) * hard + alpha * soft(T) + beta * patient`.

    Sun et al. (2019), "Patient Knowledge Distillation for BERT Model
    Compression". `soft` is the temperature-scaled soft-target cross-entropy
    at the scale of the paper's reference code (`nn.KLDivLoss(reduction=
    'mean') * T^2`, the mean running over batch x classes): per example
    `T^2 / C * sum_c softmax(t/T)_c * -log softmax(s/T)_c`
    (`SoftTargetCrossEntropy(class_mean=True)`; `soft_class_mean: false`
    sums over the `C` classes instead, as `kd` does). kdplug logs the
    cross-entropy, the reference the KL divergence: they differ by the
    teacher's entropy `T^2 / C * H(softmax(t/T))`, which has no gradient.
    `hard` is the cross-entropy with gold labels, and `patient` the
    squared distance between L2-normalised [CLS] vectors of mapped layers,
    summed over the pairs (`NormalizedClsMSE`). The student's layers below
    its top one are mapped to teacher layers by `strategy`, the registered
    `skip` or `last` layer mapping (`kdplug.mapping.SkipMapping`: student
    layer `j` <- teacher layer `j * N // M`; `LastMapping`: `N - M + j`); the
    teacher's top layer is covered by the soft loss.

    The default student is the teacher's first 3 layers (`first_k`) taken
    from the *pre-trained* teacher (before `teacher.finetune`) with a fresh
    classifier (`init: pretrained`), as in the paper ("the student is
    initialised with the first k layers of the pre-trained BERT").
    `student.init: teacher` starts from the fine-tuned teacher instead.

    Config:
        strategy: `skip` (every k-th teacher layer) or `last` (the last
            layers below the top one).
        alpha: weight of the soft loss; the hard loss gets `1 - alpha`.
        beta: weight of the patient loss (the paper searches 10..1000).
        temperature: softmax temperature T (the paper searches 5, 10, 20).
        soft_class_mean: divide the soft loss by the number of classes C,
            as the reference code's `KLDivLoss(reduction='mean')` does
            (default true); false sums over classes (`C` times stronger).

    Examples:

    ```yaml
    method:
      name: pkd
      strategy: skip
      alpha: 0.5
      beta: 100.0
      temperature: 5.0
      soft_class_mean: true
    ```
    """

    name = "pkd"
    description = "Patient KD (PKD-Skip / PKD-Last): soft + hard + normalised [CLS]"
    default_student = {"kind": "truncated", "layers": "first_k", "num_layers": 3,
                       "init": "pretrained"}
    task_kinds = ("classification", "regression", "multi_label", "token_classification",
                  "extractive_qa")

    @dataclasses.dataclass
    class Config:
        strategy: Literal["skip", "last"] = "skip"
        alpha: Probability = 0.5
        beta: NonNegativeFloat = 100.0
        temperature: PositiveFloat = 5.0
        soft_class_mean: bool = True

    def layer_map(self, teacher, student):
        """The `(teacher_layer, student_layer)` pairs (1-based) for these
        models: the registered `skip` / `last` mapping, checked against both."""
        mapping = MappingRef.of(self.config.strategy, path="method.strategy").build()
        return mapping.resolve(teacher, student)

    def stages(self, teacher, student):
        from kdplug.terms import NormalizedClsMSE

        cfg = self.config
        terms = [self.task.soft_term(cfg.temperature, weight=cfg.alpha,
                                     class_mean=cfg.soft_class_mean)]
        if cfg.alpha < 1.0:
            terms.append(self.task.hard_term(weight=1.0 - cfg.alpha))
        pairs = self.layer_map(teacher, student)
        if cfg.beta > 0 and pairs:
            terms.append(
                NormalizedClsMSE(
                    [(f"cls/{t}", f"cls/{s}") for t, s in pairs], weight=cfg.beta
                )
            )
        return [kdplug.Stage("distill", terms)]
