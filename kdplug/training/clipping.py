"""Gradient clipping across replicas, as one device would clip."""

import keras
import tensorflow as tf
from keras import ops


def clipping_settings(optimizer):
    """The optimizer's `{clipnorm, global_clipnorm, clipvalue}` when it
    clips (those of the inner optimizer of a `LossScaleOptimizer`), else
    None; None too with gradient accumulation (left to Keras)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    if getattr(inner, "gradient_accumulation_steps", None):
        return None
    settings = {k: getattr(inner, k, None)
                for k in ("clipnorm", "global_clipnorm", "clipvalue")}
    return settings if any(settings.values()) else None


def clip_across_replicas(optimizer, grads, settings=None):
    """Per-replica gradients clipped as one device would clip their sum.

    Keras clips inside `optimizer.apply`, *before* its all-reduce: under a
    strategy with several replicas each replica's partial gradient is
    clipped on its own, which is not the single-device step. Called in a
    replica context (a `train_step` under `strategy.run`), this all-reduces
    the gradients, clips the global gradient exactly as Keras on one device
    does (`clipnorm`, `global_clipnorm` or `clipvalue`; `IndexedSlices`
    measured by their slices, as Keras does) and returns `clipped /
    num_replicas` for this replica. The optimizer's own clipping then sees a
    gradient already within bounds (a no-op, up to rounding) and its sum
    over the replicas is the clipped global gradient.

    With a `LossScaleOptimizer` the gradients are unscaled for clipping and
    scaled back (a non-finite gradient stays non-finite, so the step is
    skipped as on one device). Returns `grads` unchanged with one replica,
    without clipping, or with gradient accumulation.

    `settings` (`{clipnorm, global_clipnorm, clipvalue}`) overrides the
    optimizer's: `CustomLoopTrainer` turns the optimizer's own clipping off
    while it trains and passes the saved values here.

    Examples:

    ```python
    grads = clip_across_replicas(self.optimizer, grads)
    self.optimizer.apply(grads, variables)
    ```
    """
    strategy = tf.distribute.get_strategy()
    replicas = strategy.num_replicas_in_sync
    settings = settings or clipping_settings(optimizer)
    context = tf.distribute.get_replica_context()
    if replicas == 1 or settings is None or context is None:
        return grads
    scale = None
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        scale = ops.cast(optimizer.dynamic_scale, "float32")
    sparse = [i for i, g in enumerate(grads) if isinstance(g, tf.IndexedSlices)]
    slice_squares = [ops.sum(ops.square(ops.cast(grads[i].values, "float32")))
                     for i in sparse]
    dense = [tf.convert_to_tensor(g) for g in grads]
    reduced = context.all_reduce(tf.distribute.ReduceOp.SUM, dense + slice_squares)
    grads, slice_squares = list(reduced[:len(grads)]), reduced[len(grads):]
    if scale is not None:
        grads = [g / ops.cast(scale, g.dtype) for g in grads]
        slice_squares = [s / ops.square(scale) for s in slice_squares]
    squares = [ops.sum(ops.square(ops.cast(g, "float32"))) for g in grads]
    for i, square in zip(sparse, slice_squares):
        squares[i] = square
    if settings["clipnorm"]:
        clip = settings["clipnorm"]
        grads = [g * ops.cast(clip / ops.maximum(ops.sqrt(sq), clip), g.dtype)
                 for g, sq in zip(grads, squares)]
    elif settings["global_clipnorm"]:
        clip = settings["global_clipnorm"]
        norm = ops.sqrt(ops.sum(ops.stack(squares)))
        # Keras' clip_by_global_norm: NaN when the norm is not finite
        factor = clip * ops.minimum(1.0 / norm, 1.0 / clip) + (norm - norm)
        grads = [g * ops.cast(factor, g.dtype) for g in grads]
    else:
        clip = settings["clipvalue"]
        grads = [ops.clip(g, -clip, clip) for g in grads]
    if scale is not None:
        grads = [g * ops.cast(scale, g.dtype) for g in grads]
    return [g / ops.cast(replicas, g.dtype) for g in grads]
