"""`distill()`: the common case in one call."""

from __future__ import annotations

import math
import sys
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING
from typing import Any
from typing import Optional
from typing import Union

import keras
import numpy as np
import tensorflow as tf

from kdplug.config.ranges import BatchSize
from kdplug.config.ranges import Epochs
from kdplug.config.ranges import Fraction
from kdplug.config.ranges import LearningRate
from kdplug.config.ranges import PositiveFloat
from kdplug.config.ranges import PositiveInt
from kdplug.config.ranges import Probability
from kdplug.config.ranges import WeightDecay
from kdplug.config.schema import check_arguments
from kdplug.data.batch_mix import BatchMix
from kdplug.training.callbacks import ProgressBar
from kdplug.training.callbacks import StageChecks
from kdplug.training.distiller import Distiller
from kdplug.training.optimizers import make_optimizer

if TYPE_CHECKING:
    from kdplug.terms.term import Term


def distill(*, teacher: keras.Model, student: keras.Model, train_data: Any,
            validation_data: Any = None, epochs: Epochs = 3,
            temperature: PositiveFloat = 2.0, alpha: Probability = 0.5,
            learning_rate: LearningRate = 5e-5, warmup_ratio: Fraction = 0.1,
            weight_decay: WeightDecay = 0.01, optimizer: str = "adamw",
            terms: Optional[list[Term]] = None,
            callbacks: Optional[list[keras.callbacks.Callback]] = None,
            verbose: Union[str, int] = "auto", batch_size: BatchSize = 32,
            steps_per_epoch: Optional[PositiveInt] = None) -> keras.callbacks.History:
    """Distils `teacher` into `student` with Hinton et al.'s KD and the CLI's
    optimizer recipe; returns the Keras `History`, with `history.checks`:
    the label mix of the first epoch's batches (`StageChecks.summary()`; a
    warning is logged when they are far from random samples).

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

    `train_data` is anything `keras.Model.fit` reads, as
    `keras.distillation.Distiller` takes it:

    - a `tf.data.Dataset` of `(features, labels)` batches (used as it is:
      shuffle it yourself);
    - numpy arrays or tensors as `(x, y)` or `(x, y, sample_weight)`, in
      `batch_size` batches shuffled every epoch (a bare `x` has no labels);
    - a `keras.utils.PyDataset`;
    - a Python generator of `(features, labels)` batches, with
      `steps_per_epoch` (it has no length; it must yield `epochs *
      steps_per_epoch` batches).

    `features` (or `x`) is one tensor, a tuple or list of a multi-input
    model's inputs, or a dict, from which teacher and student each read
    their inputs by name (`kdplug.models.model_taps.own_inputs`); a dict
    may also carry precomputed teacher outputs (`"teacher/logits"`), and
    `teacher` may then be None.

    Args:
        teacher, student: the models (keyword-only).
        train_data: the training data (above).
        validation_data: evaluated after every epoch: a dataset, or `(x, y)`
            arrays, as `fit` takes it.
        epochs: int.
        temperature: float. The softmax temperature `T`.
        alpha: float in [0, 1]. The soft term's weight.
        learning_rate, warmup_ratio, weight_decay, optimizer: the optimizer
            recipe (`kdplug.make_optimizer`).
        terms: loss terms replacing the KD pair.
        callbacks: Keras callbacks.
        verbose: `fit`'s verbosity; `"auto"`: a progress bar on a terminal,
            one line per epoch otherwise (a log file gets no bar drawings).
            The bar shows no ETA until the first step, which compiles, is
            done (`kdplug.training.callbacks.ProgressBar`).
        batch_size: int. The batch size of arrays (datasets, generators and
            `PyDataset`s come batched).
        steps_per_epoch: int. Batches per epoch: required for a generator;
            by default a whole pass over the data.

    Raises:
        ConfigError: an argument outside the range its annotation declares
            (`alpha` in [0, 1], `epochs` >= 1, ...), named with its value
            as a config file's field is.

    Examples:

    ```python
    history = kdplug.distill(teacher=teacher, student=student,
                             train_data=train_ds, validation_data=val_ds, epochs=3)
    student.save("student.keras")
    # plain Keras models on numpy arrays
    kdplug.distill(teacher=teacher, student=student, train_data=(x, y),
                   batch_size=64, learning_rate=1e-3)
    ```
    """
    from kdplug.terms import HardLabelCrossEntropy
    from kdplug.terms import SoftTargetCrossEntropy

    check_arguments(distill, epochs=epochs, temperature=temperature, alpha=alpha,
                    learning_rate=learning_rate, warmup_ratio=warmup_ratio,
                    weight_decay=weight_decay, batch_size=batch_size,
                    steps_per_epoch=steps_per_epoch)
    if terms is None:
        terms = [SoftTargetCrossEntropy(temperature, weight=alpha)]
        if alpha < 1.0:
            terms.append(HardLabelCrossEntropy(weight=1.0 - alpha))
    x, y, sample_weight = _split(train_data)
    steps = steps_per_epoch or batches_per_epoch(x, batch_size)
    checks = StageChecks("distill", BatchMix("auto"))
    x = _counted(x, checks.mix, steps)
    distiller = Distiller(student=student, teacher=teacher, terms=terms)
    distiller.compile(
        optimizer=make_optimizer(optimizer, learning_rate, steps * epochs,
                                 warmup_ratio, weight_decay),
        metrics=["accuracy"])
    batched = _comes_batched(x)
    history = distiller.fit(
        x, y, sample_weight=sample_weight, batch_size=None if batched else batch_size,
        shuffle=not batched,  # a dataset is the caller's to shuffle (no Keras warning)
        steps_per_epoch=steps_per_epoch, validation_data=validation_data,
        epochs=epochs, callbacks=_callbacks(callbacks, checks),
        verbose=(1 if sys.stdout.isatty() else 2) if verbose == "auto" else verbose)
    history.checks = checks.summary()
    return history


def _callbacks(given: Optional[list[keras.callbacks.Callback]],
               checks: StageChecks) -> list[keras.callbacks.Callback]:
    """Every callback `distill()` trains with: the label-mix check of the
    first epoch's batches (`StageChecks`), the caller's, and kdplug's
    progress bar unless the caller gave one."""
    given = list(given or [])
    bar = [] if any(isinstance(c, keras.callbacks.ProgbarLogger) for c in given) \
        else [ProgressBar()]
    return [checks, *given, *bar]


def _counted(x: Any, mix: BatchMix, steps: int) -> Any:
    """`x` with the labels of its first `steps` batches counted by `mix`
    (`BatchMix`) as they are read: a dataset through `mix.tap`, a generator
    wrapped; arrays are shuffled by `fit` itself and a `PyDataset` is left
    as it is (not counted)."""
    if isinstance(x, tf.data.Dataset):
        return mix.tap(x, steps)
    if isinstance(x, types.GeneratorType):
        return _counting(x, mix, steps)
    mix.skip("arrays are shuffled by fit" if not _comes_batched(x)
             else "a PyDataset is not counted")
    return x


def _counting(batches: Iterator[Any], mix: BatchMix, steps: int) -> Iterator[Any]:
    for index, batch in enumerate(batches):
        if index < steps and isinstance(batch, tuple) and len(batch) >= 2:
            mix.add(np.asarray(batch[1]))
        yield batch


def _split(train_data: Any) -> tuple[Any, Any, Any]:
    """`(x, y, sample_weight)` of `train_data`: a tuple is `(x, y)` or
    `(x, y, sample_weight)`, as `validation_data` is read; anything else is
    `x` (labels inside, or none)."""
    if isinstance(train_data, tuple):
        if not 1 <= len(train_data) <= 3:
            raise ValueError(
                "train_data as a tuple is (x, y) or (x, y, sample_weight), got "
                f"{len(train_data)} items (a multi-input model's inputs go in a "
                "tuple or list of their own: ((x1, x2), y))")
        return keras.utils.unpack_x_y_sample_weight(train_data)
    return train_data, None, None


def _comes_batched(x: Any) -> bool:
    """Whether `x` yields batches itself (anything but arrays)."""
    return isinstance(x, (tf.data.Dataset, keras.utils.PyDataset, types.GeneratorType))


def batches_per_epoch(x: Any, batch_size: int = 32) -> int:
    """The number of batches in one pass over `x`, as `fit` reads it.

    Args:
        x: a finite, batched `tf.data.Dataset`, a `keras.utils.PyDataset`
            with a length, or arrays (one, a tuple or list, a dict) of
            examples along their first axis.
        batch_size: int. The batch size of arrays.

    Returns:
        int.

    Raises:
        ValueError: the data has no length (an infinite or unknown-size
            dataset, a generator) or no examples.

    Examples:

    >>> import numpy as np
    >>> batches_per_epoch({"a": np.zeros((100, 3)), "b": np.zeros((100, 2))}, 32)
    4
    """
    if isinstance(x, tf.data.Dataset):
        steps = int(x.cardinality())
        if steps <= 0:
            raise ValueError(
                "train_data must be a finite, batched tf.data.Dataset (its "
                f"cardinality is {steps}), or pass steps_per_epoch")
        return steps
    if isinstance(x, keras.utils.PyDataset):
        steps = x.num_batches
        if steps is None:
            raise ValueError("this PyDataset has no length; pass steps_per_epoch")
        return steps
    if isinstance(x, types.GeneratorType):
        raise ValueError("a Python generator has no length; pass steps_per_epoch "
                         "(the batches per epoch)")
    leaves = keras.tree.flatten(x)
    if not leaves or not hasattr(leaves[0], "shape") or not len(leaves[0].shape):
        raise ValueError(
            "train_data must be a tf.data.Dataset, a keras.utils.PyDataset, a "
            "generator, or arrays as (x, y) with examples along the first axis; "
            f"got {type(x).__name__}")
    return max(1, math.ceil(int(leaves[0].shape[0]) / batch_size))
