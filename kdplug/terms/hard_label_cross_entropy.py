import keras
from keras import ops

from kdplug import keys
from kdplug.terms.term import Term
from kdplug.terms.term import label_mask

UNLABELLED_RULES = ("skip", "teacher_argmax")


@keras.saving.register_keras_serializable(package="kdplug")
class HardLabelCrossEntropy(Term):
    """Cross-entropy between the student's logits and the gold labels.

    Per example `i` with student logits `s_i` and label `y_i`:

    ```
    loss_i = -log softmax(s_i)[y_i]                      if y_i >= 0
    loss_i = 0                                           if y_i < 0, unlabelled="skip"
    loss_i = -log softmax(s_i)[argmax_c t_ic]            if y_i < 0, unlabelled="teacher_argmax"
    ```

    Examples without a gold label (label `-1`, e.g. augmented transfer-set
    examples) contribute zero by default (`unlabelled="skip"`), so no
    teacher output is read. The `Distiller` divides the summed loss by the
    whole batch, so with `skip` the hard term's share shrinks as the transfer
    set grows (x1/21 of the batch is labelled with 20 augmented copies per
    example). `unlabelled="teacher_argmax"` labels those examples with the
    teacher's predicted class instead, as Tang et al. (2019)'s reference code
    labels its augmented transfer set ("Distilling Task-Specific Knowledge
    from BERT into Simple Neural Networks"); the term then reads the
    teacher's `teacher_tap`.

    Args:
        weight: float. Weight in the total loss.
        tap: str. The student logits tap.
        unlabelled: `"skip"` (label < 0 contributes 0) or `"teacher_argmax"`
            (label < 0 uses the argmax of the teacher's `teacher_tap`).
        teacher_tap: str. The teacher logits tap read by `teacher_argmax`.

    Examples:

    ```python
    term = HardLabelCrossEntropy(weight=0.5)
    per_example = term({}, {"logits": s}, {"labels": labels})
    term = HardLabelCrossEntropy(weight=0.5, unlabelled="teacher_argmax")
    per_example = term({"logits": t}, {"logits": s}, {"labels": labels})
    ```
    """

    def __init__(self, weight=1.0, tap="logits", name=None, unlabelled="skip",
                 teacher_tap="logits", **kwargs):
        super().__init__(weight=weight, name=name or "hard_ce", **kwargs)
        if unlabelled not in UNLABELLED_RULES:
            raise ValueError(
                f"unlabelled must be one of {UNLABELLED_RULES}, got {unlabelled!r}")
        self.tap = tap
        self.unlabelled = unlabelled
        self.teacher_tap = teacher_tap

    def required_teacher_taps(self):
        return {self.teacher_tap} if self.unlabelled == "teacher_argmax" else set()

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        logits = ops.cast(student[self.tap], "float32")
        labels = ops.cast(batch[keys.LABELS], "int32")
        if self.unlabelled == "teacher_argmax":
            predicted = ops.cast(ops.argmax(
                ops.cast(teacher[self.teacher_tap], "float32"), axis=-1), "int32")
            labels = ops.where(ops.greater_equal(labels, 0), labels, predicted)
            return keras.losses.sparse_categorical_crossentropy(
                labels, logits, from_logits=True)
        mask = label_mask(batch)
        ce = keras.losses.sparse_categorical_crossentropy(
            ops.maximum(labels, 0), logits, from_logits=True
        )
        return ce * mask

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap, "unlabelled": self.unlabelled,
                       "teacher_tap": self.teacher_tap})
        return config
