"""The loss-term contract."""

from collections.abc import Mapping
from typing import Any
from typing import Optional

import keras
from keras import ops

from kdplug import keys

# A backend tensor (a `tf.Tensor` under kdplug's TensorFlow backend), and
# what a term reads: tap name -> tensor (`logits`, `hidden/3`, ...).
Tensor = Any
Taps = Mapping[str, Tensor]


class Term(keras.layers.Layer):
    """A weighted loss term comparing teacher and student taps.

    A term returns a *per-example* loss of shape `(batch,)`; the `Distiller`
    sums the weighted terms and reduces by the global batch size, so a term is
    correct under any `tf.distribute` strategy without knowing about it.

    Subclasses declare the taps they read in `teacher_taps` / `student_taps`
    (for example `("logits",)` or `("hidden/3",)`) and implement `call`.
    The weight (and any other schedulable scalar) is a non-trainable variable
    so that callbacks can change it during training.

    Args:
        weight: float. The term's initial weight in the total loss.
        name: str. The name shown in the progress bar and history.

    Examples:

    ```python
    class L1Logits(Term):
        teacher_taps = ("logits",)
        student_taps = ("logits",)

        def call(self, teacher, student, batch):
            return ops.mean(ops.abs(teacher["logits"] - student["logits"]), -1)
    ```
    """

    teacher_taps: tuple[str, ...] = ()
    student_taps: tuple[str, ...] = ()

    def __init__(self, weight: float = 1.0, name: Optional[str] = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.initial_weight = float(weight)
        self.weight = self.add_weight(
            shape=(),
            initializer=keras.initializers.Constant(self.initial_weight),
            trainable=False,
            name="weight",
        )
        self.built = True

    def required_teacher_taps(self) -> set[str]:
        return set(self.teacher_taps)

    def required_student_taps(self) -> set[str]:
        return set(self.student_taps)

    def check_taps(self, teacher: Taps, student: Taps) -> None:
        """Raises `KdplugError` when the taps cannot be compared, from their
        static shapes (the `Distiller` calls it before `call`, once per
        trace, so the error names the term and the models rather than a
        failed op). Nothing by default."""

    def call(self, teacher: Taps, student: Taps, batch: Taps) -> Tensor:
        raise NotImplementedError(
            f"{type(self).__name__} must implement call(teacher, student, batch)"
        )

    def compute_output_spec(self, teacher: Taps, student: Taps,
                            batch: Taps) -> keras.KerasTensor:
        first = next(iter(student.values()))
        return keras.KerasTensor((first.shape[0],), dtype="float32")

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"weight": self.initial_weight})
        return config


def label_mask(batch: Taps) -> Tensor:
    """1.0 where the example has a gold label (labels >= 0), else 0.0."""
    labels = batch[keys.LABELS]
    return ops.cast(ops.greater_equal(labels, 0), "float32")
