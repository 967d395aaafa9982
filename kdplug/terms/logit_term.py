"""The base of terms that compare one teacher tap with the same student tap."""

from keras import ops

from kdplug.errors import KdplugError
from kdplug.terms.term import Term


class LogitTerm(Term):
    """A `Term` comparing the teacher's and the student's `tap` (by default
    their logits), e.g. soft-target cross-entropy or logit MSE.

    Stores `self.tap`, requires it from both models, saves it under the
    `"tap"` config key and offers `logits(teacher, student)`: both taps cast
    to float32. Subclasses implement `call` and add their own config; the
    tap, weight and name are keyword arguments of the constructor.

    Examples:

    ```python
    class LogitL1(LogitTerm):
        def call(self, teacher, student, batch):
            t, s = self.logits(teacher, student)
            return ops.mean(ops.abs(t - s), axis=-1)

    LogitL1(tap="logits", weight=0.5, name="logit_l1")
    ```
    """

    def __init__(self, tap="logits", weight=1.0, name=None, **kwargs):
        super().__init__(weight=weight, name=name, **kwargs)
        self.tap = tap

    def required_teacher_taps(self):
        return {self.tap}

    def required_student_taps(self):
        return {self.tap}

    def check_taps(self, teacher, student):
        """The two taps have the same rank and the same last dimension (the
        classes compared one by one)."""
        t, s = teacher[self.tap].shape, student[self.tap].shape
        if len(t) != len(s) or (None not in (t[-1], s[-1]) and t[-1] != s[-1]):
            raise KdplugError(
                f"{self.name}: the teacher's {self.tap!r} has shape {tuple(t)} and "
                f"the student's {tuple(s)}; the term compares them output by "
                f"output, so the student needs the teacher's {t[-1]} outputs "
                "(e.g. data.num_classes, or a head of that size)")

    def logits(self, teacher, student):
        """`(t, s)`: the teacher's and the student's `tap`, float32."""
        return (ops.cast(teacher[self.tap], "float32"),
                ops.cast(student[self.tap], "float32"))

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap})
        return config
