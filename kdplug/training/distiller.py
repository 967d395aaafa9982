"""`Distiller`: the Keras model that trains a student against a teacher."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import Optional

import keras
import tensorflow as tf
from keras import ops

from kdplug import keys
from kdplug.errors import KdplugError
from kdplug.models.model_taps import model_taps
from kdplug.models.model_taps import own_inputs
from kdplug.training.clipping import clip_across_replicas
from kdplug.training.metrics import update_step_metrics

if TYPE_CHECKING:
    from kdplug.terms.term import Taps
    from kdplug.terms.term import Tensor
    from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class Distiller(keras.Model):
    """Trains a student against a frozen teacher with weighted loss terms.

    `train_step` reads the teacher's taps from the batch when they were
    precomputed (keys `"teacher/<tap>"`, e.g. from the teacher-output cache),
    otherwise runs the frozen teacher with `training=False` outside the
    gradient tape. It then runs the student once, asks every `Term` for a
    per-example loss, and minimises `sum_k weight_k * sum_i loss_ki / B` where
    `B` is the *global* batch size: under a `tf.distribute` strategy each
    replica divides its local sum by `local_batch * num_replicas_in_sync`,
    exactly as Keras' `sum_over_batch_size` losses do. Logged values (`loss`
    and one entry per term) are per-example means.

    `call()` returns the student's output, so `predict()` and `evaluate()`
    behave like the student's. Metrics passed to `compile()` compare the
    student's logits with the gold labels (unlabelled examples, label `-1`,
    are masked out).

    The student comes first (`keras.distillation.Distiller` takes the
    teacher first): pass `student=` and `teacher=` by keyword when in doubt.
    A swap is caught where it shows: the same model twice, or a student with
    no trainable weights (a teacher frozen earlier), is an error. (Sizes are
    no test: FastBERT's student is its teacher plus exit branches.)

    Any `keras.Model` can be the teacher or the student: kdplug's models
    answer `taps(inputs, names, training)` (hidden states, attention, ...);
    another model gives its output as the `logits` tap and, when it is
    functional, the output of any named layer as the tap of that name
    (`kdplug.models.model_taps`), so logit terms and feature terms on named
    layers work with a user's own models.

    `fit` takes what `keras.Model.fit` (and `keras.distillation.Distiller`)
    takes: numpy arrays, tensors, a `tf.data.Dataset`, a Python generator
    or a `keras.utils.PyDataset`, whose features are one tensor, a tuple or
    list of a multi-input model's inputs, or a dict. Teacher and student
    each get their own inputs from a dict, by name (`kdplug.models.
    model_taps.own_inputs`), and only dict features can carry precomputed
    teacher outputs.

    Args:
        student: the model trained (e.g. `kdplug.models.BertClassifier`, or
            any `keras.Model`).
        teacher: the frozen model, or None when every batch carries the
            teacher's outputs.
        terms: a list of `kdplug.terms.Term`.

    Examples:

    ```python
    distiller = Distiller(
        student, teacher,
        terms=[SoftTargetCrossEntropy(temperature=2.0, weight=0.5),
               HardLabelCrossEntropy(weight=0.5)])
    distiller.compile(optimizer="adamw", metrics=["accuracy"])
    distiller.fit(train_ds, validation_data=val_ds, epochs=3)
    distiller.student.save("student.keras")
    # numpy arrays, for a plain Keras student and teacher of one input
    distiller.fit(x_train, y_train, batch_size=32, epochs=3)
    ```
    """

    def __init__(self, student: keras.Model, teacher: Optional[keras.Model] = None,
                 terms: Sequence[Term] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_roles(student, teacher)
        self.student = student
        self.teacher = teacher
        if teacher is not None:
            teacher.trainable = False
        self.terms = list(terms)
        if not self.terms:
            raise KdplugError("a Distiller needs at least one loss term")
        names = [t.name for t in self.terms]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise KdplugError(f"loss term names must be unique: {duplicates}")
        self.teacher_tap_names = sorted(
            set().union(*(t.required_teacher_taps() for t in self.terms))
        )
        self.student_tap_names = sorted(
            set().union(*(t.required_student_taps() for t in self.terms))
            | {"logits"}
        )
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.term_trackers = [keras.metrics.Mean(name=n) for n in names]
        # Student, teacher and terms create their weights when constructed, so
        # the Distiller is built (checkpoint callbacks require that).
        self.built = all(m.built for m in (student, teacher) if m is not None)

    def compile(self, optimizer: Any = "adamw", metrics: Optional[list[Any]] = None,
                **kwargs: Any) -> None:
        """Like `keras.Model.compile` (no `loss`: the terms are the loss).

        `metrics` compare the student's logits with the gold labels, an
        example without one (label `-1`: augmented, or an unlabelled stage)
        weighted 0. Keras passes sample weights only to `weighted_metrics`,
        so they are compiled as those (under their own names): compiled as
        `metrics`, an unlabelled example would count as class 0.

        The optimizer is built for the trainable weights right away, so the
        first `fit` traces the train step once and checkpoints can restore
        optimizer state.
        """
        if metrics:
            kwargs["weighted_metrics"] = [*metrics, *(kwargs.get("weighted_metrics") or [])]
        super().compile(optimizer=optimizer, **kwargs)
        self.optimizer.build(self.trainable_variables)

    def compile_from_config(self, config: dict[str, Any]) -> None:
        self.compile(**keras.saving.deserialize_keras_object(config))

    @property
    def metrics(self) -> list[keras.metrics.Metric]:
        metrics = [self.loss_tracker, *self.term_trackers]
        if self.compiled and self._compile_metrics is not None:
            metrics.append(self._compile_metrics)
        return metrics

    def call(self, inputs: Any, training: bool = False) -> Tensor:
        if not hasattr(self.student, "taps"):  # a plain Keras model: its own inputs
            inputs = own_inputs(self.student, inputs)
        return self.student(inputs, training=training)

    def teacher_taps(self, x: Any) -> dict[str, Tensor]:
        """The teacher's taps for a batch: cached in `x` or computed."""
        cached = keys.teacher_taps(x)
        if cached:
            missing = set(self.teacher_tap_names) - set(cached)
            if missing:
                raise KdplugError(
                    f"the batch carries cached teacher outputs {sorted(cached)}"
                    f" but the loss terms also need {sorted(missing)}"
                )
            return {n: cached[n] for n in self.teacher_tap_names}
        if not self.teacher_tap_names:
            return {}
        if self.teacher is None:
            raise KdplugError(
                "no teacher model and no cached teacher outputs in the batch"
            )
        taps = model_taps(self.teacher, x, self.teacher_tap_names, training=False)
        return {k: ops.stop_gradient(v) for k, v in taps.items()}

    def compute_terms(self, x: Any, y: Optional[Tensor], sample_weight: Optional[Tensor],
                      training: bool) -> tuple[Tensor, list[Tensor], Tensor, Taps]:
        """Returns `(total, per_term, weighted, student_taps)`.

        `total` is the replica-local contribution to the global-batch mean;
        `per_term` holds each term's unweighted per-example losses,
        `weighted` their weighted per-example sum.
        """
        teacher = self.teacher_taps(x)
        student = model_taps(self.student, x, self.student_tap_names, training=training)
        batch = dict(x) if isinstance(x, dict) else {}  # terms read features by key
        batch[keys.LABELS] = y if y is not None else ops.full(
            ops.shape(student["logits"])[:1], -1, dtype="int32"
        )
        for term in self.terms:
            term.check_taps(teacher, student)
        per_term = [ops.cast(t(teacher, student, batch), "float32") for t in self.terms]
        weighted = sum(
            ops.cast(t.weight, "float32") * loss for t, loss in zip(self.terms, per_term)
        )
        if sample_weight is not None:
            weighted = weighted * ops.cast(sample_weight, "float32")
        local_batch = ops.cast(ops.shape(weighted)[0], "float32")
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        total = ops.sum(weighted) / (local_batch * replicas)
        return total, per_term, weighted, student

    def train_step(self, data: Any) -> dict[str, Any]:
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            total, per_term, weighted, student = self.compute_terms(
                x, y, sample_weight, training=True
            )
            scaled = self.optimizer.scale_loss(total)
        variables = self.trainable_variables
        grads = tape.gradient(scaled, variables)
        pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if not pairs:
            raise KdplugError("no trainable weight receives a gradient")
        # Several replicas: clip the all-reduced gradient, as one device would
        # (Keras clips each replica's share before summing).
        grads = clip_across_replicas(self.optimizer, [g for g, _ in pairs])
        self.optimizer.apply(grads, [v for _, v in pairs])
        return self._update_metrics(y, sample_weight, per_term, weighted, student)

    def test_step(self, data: Any) -> dict[str, Any]:
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        _, per_term, weighted, student = self.compute_terms(
            x, y, sample_weight, training=False
        )
        return self._update_metrics(y, sample_weight, per_term, weighted, student)

    def _update_metrics(self, y: Optional[Tensor], sample_weight: Optional[Tensor],
                        per_term: list[Tensor], weighted: Tensor,
                        student: Taps) -> dict[str, Any]:
        compiled = [] if self._compile_metrics is None else [self._compile_metrics]
        update_step_metrics(self.loss_tracker, self.term_trackers, compiled, y,
                            sample_weight, per_term, weighted, student["logits"])
        return self.get_metrics_result()

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "student": keras.saving.serialize_keras_object(self.student),
                "teacher": keras.saving.serialize_keras_object(self.teacher),
                "terms": [keras.saving.serialize_keras_object(t) for t in self.terms],
            }
        )
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Distiller:
        config = dict(config)
        config["student"] = keras.saving.deserialize_keras_object(config["student"])
        config["teacher"] = keras.saving.deserialize_keras_object(config["teacher"])
        config["terms"] = [
            keras.saving.deserialize_keras_object(t) for t in config["terms"]
        ]
        return cls(**config)


def check_roles(student: keras.Model, teacher: Optional[keras.Model]) -> None:
    """Raises `KdplugError` when `student` and `teacher` look swapped: the
    same model, or a student with nothing to train."""
    order = ("Distiller(student, teacher, terms) takes the student first "
             "(keras.distillation.Distiller takes the teacher first); pass "
             "student=... and teacher=... by keyword")
    if teacher is None:
        return
    if student is teacher:
        raise KdplugError(f"the student and the teacher are the same model; {order}")
    if student.built and not student.trainable_weights:
        raise KdplugError(
            f"the student {student.name!r} has no trainable weights (a frozen "
            f"teacher passed as the student?); {order}")
