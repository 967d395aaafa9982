import keras
from keras import ops

from kdplug import keys
from kdplug.terms.term import Term
from kdplug.terms.term import label_mask


@keras.saving.register_keras_serializable(package="kdplug")
class HardLabelCrossEntropy(Term):
    """Cross-entropy between the student's logits and the gold labels.

    Examples without a gold label (label `-1`, e.g. augmented transfer-set
    examples) contribute zero. No teacher output is read.

    Args:
        weight: float. Weight in the total loss.
        tap: str. The student logits tap.

    Examples:

    ```python
    term = HardLabelCrossEntropy(weight=0.5)
    per_example = term({}, {"logits": s}, {"labels": labels})
    ```
    """

    def __init__(self, weight=1.0, tap="logits", name=None, **kwargs):
        super().__init__(weight=weight, name=name or "hard_ce", **kwargs)
        self.tap = tap

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        logits = ops.cast(student[self.tap], "float32")
        mask = label_mask(batch)
        labels = ops.maximum(ops.cast(batch[keys.LABELS], "int32"), 0)
        ce = keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True
        )
        return ce * mask

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap})
        return config
