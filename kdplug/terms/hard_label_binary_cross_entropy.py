import keras
from keras import ops

from kdplug import keys
from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class HardLabelBinaryCrossEntropy(Term):
    """Binary cross-entropy of the student's per-label logits against gold
    multi-hot labels: the hard term of a multi-label task.

    Per example `i` with logits `s_i` and labels `y_i` over `L` labels
    (`sigma` the sigmoid):

    ```
    loss_i = 1/L * sum_l -[y_il log sigma(s_il) + (1 - y_il) log(1 - sigma(s_il))]
    ```

    the mean over labels, as `keras.losses.binary_crossentropy`. An example
    whose labels are negative (no gold label set) contributes 0.

    Args:
        weight: float. Weight in the total loss.
        tap: str. The student logits tap, `(batch, L)`.

    Examples:

    ```python
    term = HardLabelBinaryCrossEntropy(weight=0.5)
    per_example = term({}, {"logits": s}, {"labels": multi_hot})
    ```
    """

    def __init__(self, weight=1.0, tap="logits", name=None, **kwargs):
        super().__init__(weight=weight, name=name or "hard_bce", **kwargs)
        self.tap = tap

    def required_teacher_taps(self):
        return set()

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        logits = ops.cast(student[self.tap], "float32")
        labels = ops.cast(batch[keys.LABELS], "float32")
        labelled = ops.cast(ops.all(ops.greater_equal(labels, 0.0), axis=-1), "float32")
        bce = keras.losses.binary_crossentropy(
            ops.maximum(labels, 0.0), logits, from_logits=True)
        return bce * labelled

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap})
        return config
