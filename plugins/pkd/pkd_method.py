import dataclasses
from typing import Literal

import kdplug
from kdplug.config.refs import MappingRef


class PKDMethod(kdplug.Method):
    """Patient KD: `(1 - alpha) * hard + alpha * soft(T) + beta * patient`.

    Sun et al. (2019), "Patient Knowledge Distillation for BERT Model
    Compression". `soft` is the temperature-scaled soft-target cross-entropy
    (kdplug's `SoftTargetCrossEntropy`, which includes Hinton's `T^2`
    factor), `hard` the cross-entropy with gold labels, and `patient` the
    squared distance between L2-normalised [CLS] vectors of mapped layers,
    summed over the pairs (`NormalizedClsMSE`). The student's layers below
    its top one are mapped to teacher layers by `strategy`, the registered
    `skip` or `last` layer mapping (`kdplug.mapping.SkipMapping`: student
    layer `j` <- teacher layer `j * N // M`; `LastMapping`: `N - M + j`); the
    teacher's top layer is covered by the soft loss.

    The default student is the teacher's first 3 layers (`first_k`), as in
    the paper (which initialises BERT_3 / BERT_6 from BERT_12's first
    layers).

    Config:
        strategy: `skip` (every k-th teacher layer) or `last` (the last
            layers below the top one).
        alpha: weight of the soft loss; the hard loss gets `1 - alpha`.
        beta: weight of the patient loss (the paper searches 10..1000).
        temperature: softmax temperature T (the paper searches 5, 10, 20).

    Examples:

    ```yaml
    method:
      name: pkd
      strategy: skip
      alpha: 0.5
      beta: 100.0
      temperature: 5.0
    ```
    """

    name = "pkd"
    description = "Patient KD (PKD-Skip / PKD-Last): soft + hard + normalised [CLS]"
    default_student = {"kind": "truncated", "layers": "first_k", "num_layers": 3}

    @dataclasses.dataclass
    class Config:
        strategy: Literal["skip", "last"] = "skip"
        alpha: float = 0.5
        beta: float = 100.0
        temperature: float = 5.0

        def __post_init__(self):
            if not 0.0 <= self.alpha <= 1.0:
                raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
            if self.beta < 0:
                raise ValueError(f"beta must be >= 0, got {self.beta}")
            if self.temperature <= 0:
                raise ValueError(
                    f"temperature must be > 0, got {self.temperature}"
                )

    def layer_map(self, teacher, student):
        """The `(teacher_layer, student_layer)` pairs (1-based) for these
        models: the registered `skip` / `last` mapping, checked against both."""
        mapping = MappingRef.of(self.config.strategy, path="method.strategy").build()
        return mapping.resolve(teacher, student)

    def stages(self, teacher, student):
        from kdplug.terms import HardLabelCrossEntropy
        from kdplug.terms import NormalizedClsMSE
        from kdplug.terms import SoftTargetCrossEntropy

        cfg = self.config
        terms = [SoftTargetCrossEntropy(cfg.temperature, weight=cfg.alpha)]
        if cfg.alpha < 1.0:
            terms.append(HardLabelCrossEntropy(weight=1.0 - cfg.alpha))
        pairs = self.layer_map(teacher, student)
        if cfg.beta > 0 and pairs:
            terms.append(
                NormalizedClsMSE(
                    [(f"cls/{t}", f"cls/{s}") for t, s in pairs], weight=cfg.beta
                )
            )
        return [kdplug.Stage("distill", terms)]
