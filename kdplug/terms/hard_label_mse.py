import keras
from keras import ops

from kdplug import keys
from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class HardLabelMSE(Term):
    """Squared error between the student's prediction and a gold float
    target: the hard term of a regression task.

    Per example `i` with the student's one-output head `s_i` and target
    `y_i`: `loss_i = (s_i - y_i)^2`; an example whose target is NaN (no gold
    value) contributes 0.

    Args:
        weight: float. Weight in the total loss.
        tap: str. The student's prediction tap, `(batch, 1)`.

    Examples:

    ```python
    term = HardLabelMSE(weight=0.5)
    per_example = term({}, {"logits": predictions}, {"labels": targets})
    ```
    """

    def __init__(self, weight=1.0, tap="logits", name=None, **kwargs):
        super().__init__(weight=weight, name=name or "hard_mse", **kwargs)
        self.tap = tap

    def required_teacher_taps(self):
        return set()

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        prediction = ops.cast(student[self.tap], "float32")[:, 0]
        target = ops.cast(batch[keys.LABELS], "float32")
        labelled = ops.logical_not(ops.isnan(target))
        error = ops.square(prediction - ops.where(labelled, target, 0.0))
        return ops.where(labelled, error, 0.0)

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap})
        return config
