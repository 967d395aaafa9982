import dataclasses
from typing import Literal

import kdplug
from kdplug.config import PositiveFloat
from kdplug.config import Probability


class KDMethod(kdplug.Method):
    """Vanilla KD: `alpha * soft + (1 - alpha) * hard`.

    `soft` is Hinton's temperature-scaled soft-target cross-entropy (times
    T^2) or, with `soft_loss: mse`, Tang et al.'s MSE between logits. `hard`
    is cross-entropy with the gold labels (unlabelled examples excluded).
    On a regression or multi-label task both take that task's form
    (`kdplug.tasks`: squared error on the prediction; per-label sigmoid
    soft targets with T and binary cross-entropy).

    Config:
        temperature: softmax temperature T.
        alpha: weight of the soft term; the hard term gets `1 - alpha`.
        soft_loss: `cross_entropy` or `mse`.

    Examples:

    ```yaml
    method:
      name: kd
      temperature: 2.0
      alpha: 0.7
    ```
    """

    name = "kd"
    description = "Hinton soft targets (or logit MSE) + hard labels"
    default_student = {"kind": "truncated", "layers": "every_other"}
    task_kinds = ("classification", "regression", "multi_label", "token_classification",
                  "extractive_qa")

    @dataclasses.dataclass
    class Config:
        temperature: PositiveFloat = 2.0
        alpha: Probability = 0.5
        soft_loss: Literal["cross_entropy", "mse"] = "cross_entropy"

    def stages(self, teacher, student):
        from kdplug.terms import LogitMSE

        cfg = self.config
        if cfg.soft_loss == "mse":
            soft = LogitMSE(weight=cfg.alpha, name="soft_mse")
        else:
            soft = self.task.soft_term(cfg.temperature, weight=cfg.alpha)
        terms = [soft]
        if cfg.alpha < 1.0:
            terms.append(self.task.hard_term(weight=1.0 - cfg.alpha))
        return [kdplug.Stage("distill", terms)]
