"""`distill()`: the common case in one call."""

import tensorflow as tf

from kdplug.training.distiller import Distiller
from kdplug.training.optimizers import make_optimizer


def distill(*, teacher, student, train_data, validation_data=None, epochs=3,
            temperature=2.0, alpha=0.5, learning_rate=5e-5, warmup_ratio=0.1,
            weight_decay=0.01, optimizer="adamw", terms=None, callbacks=None,
            verbose="auto"):
    """Distils `teacher` into `student` with Hinton et al.'s KD and the CLI's
    optimizer recipe; returns the Keras `History`.

    The loss is `alpha * soft + (1 - alpha) * hard`: temperature-scaled
    soft-target cross-entropy against the teacher's logits (times `T^2`)
    and cross-entropy with the gold labels (`-1`: no label). The optimizer
    is `make_optimizer` (warm-up then linear decay over `epochs` x the
    batches of `train_data`, global-norm clipping 1.0). `student` is trained
    in place; the teacher stays frozen. Both are keyword-only, so they
    cannot be swapped by position (`keras.distillation.Distiller` takes the
    teacher first, `kdplug.Distiller` the student).

    Any `keras.Model` works as either (its output is the `logits` tap;
    `kdplug.Distiller` documents the taps). For other losses, pass `terms`
    (a list of `kdplug.terms.Term`), which replaces the KD pair.

    Args:
        teacher, student: the models (keyword-only).
        train_data: a `tf.data.Dataset` of `(features, labels)` batches
            (features a dict, e.g. `token_ids`, `padding_mask`).
        validation_data: the same, evaluated after every epoch.
        epochs: int.
        temperature: float. The softmax temperature `T`.
        alpha: float in [0, 1]. The soft term's weight.
        learning_rate, warmup_ratio, weight_decay, optimizer: the optimizer
            recipe (`kdplug.make_optimizer`).
        terms: loss terms replacing the KD pair.
        callbacks: Keras callbacks.
        verbose: `fit`'s verbosity.

    Examples:

    ```python
    history = kdplug.distill(teacher=teacher, student=student,
                             train_data=train_ds, validation_data=val_ds, epochs=3)
    student.save("student.keras")
    ```
    """
    from kdplug.terms import HardLabelCrossEntropy
    from kdplug.terms import SoftTargetCrossEntropy

    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if terms is None:
        terms = [SoftTargetCrossEntropy(temperature, weight=alpha)]
        if alpha < 1.0:
            terms.append(HardLabelCrossEntropy(weight=1.0 - alpha))
    if not isinstance(train_data, tf.data.Dataset):
        raise ValueError("train_data must be a tf.data.Dataset of (features, labels) "
                         f"batches, got {type(train_data).__name__} (e.g. "
                         "kdplug.data.TextEncoder(...).dataset(examples, batch_size))")
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    steps = int(train_data.cardinality())
    if steps <= 0:
        raise ValueError("train_data must be a finite, batched tf.data.Dataset "
                         f"(its cardinality is {steps})")
    distiller = Distiller(student=student, teacher=teacher, terms=terms)
    distiller.compile(
        optimizer=make_optimizer(optimizer, learning_rate, steps * epochs,
                                 warmup_ratio, weight_decay),
        metrics=["accuracy"])
    return distiller.fit(train_data, validation_data=validation_data, epochs=epochs,
                         callbacks=callbacks, verbose=verbose)
