import keras
from keras import ops

from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class LogitMSE(Term):
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
        super().__init__(weight=weight, name=name or "logit_mse", **kwargs)
        self.tap = tap

    def required_teacher_taps(self):
        return {self.tap}

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        t = ops.cast(teacher[self.tap], "float32")
        s = ops.cast(student[self.tap], "float32")
        return ops.mean(ops.square(t - s), axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap})
        return config
