import keras
from keras import ops

from kdplug.terms.logit_term import LogitTerm


@keras.saving.register_keras_serializable(package="kdplug")
class LogitMSE(LogitTerm):
    """Mean squared error between teacher and student logits (Tang et al. 2019).

    Per example: `mean_c (t_c - s_c)^2`.

    Args:
        weight: float. Weight in the total loss.
        tap: str. The logits tap to compare.

    Examples:

    ```python
    term = LogitMSE(weight=1.0)
    per_example = term({"logits": t}, {"logits": s}, batch)
    ```
    """

    def __init__(self, weight=1.0, tap="logits", name=None, **kwargs):
        super().__init__(tap=tap, weight=weight, name=name or "logit_mse",
                         **kwargs)

    def call(self, teacher, student, batch):
        t, s = self.logits(teacher, student)
        return ops.mean(ops.square(t - s), axis=-1)
