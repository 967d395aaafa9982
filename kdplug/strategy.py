"""`training.strategy` -> a `tf.distribute.Strategy`; mixed precision;
gradient clipping across replicas."""

import contextlib

import keras
import tensorflow as tf
from keras import ops

from kdplug.errors import ConfigError


def make_strategy(name):
    """Builds the strategy a config names.

    - `default`: the default (no-op) strategy.
    - `one_device`: the first GPU if any, else the CPU.
    - `mirrored`: `MirroredStrategy` over all local GPUs (or logical CPUs).
    - `multi_worker`: `MultiWorkerMirroredStrategy` from `TF_CONFIG`.
    - `tpu`: `TPUStrategy` on the TPU the cluster resolver finds.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        return mirrored_strategy()
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, tf.errors.NotFoundError) as e:
            raise ConfigError(
                f"no TPU found: {e}", field="training.strategy", value=name
            ) from None
        return tf.distribute.TPUStrategy(resolver)
    raise ConfigError("unknown strategy", field="training.strategy", value=name)


def mirrored_strategy(devices=None, cross_device_ops=None):
    """`MirroredStrategy` over `devices` (default: every local GPU, else every
    logical CPU).

    Args:
        devices: device names, e.g. `["/cpu:0", "/cpu:1"]`.
        cross_device_ops: passed on. None means TensorFlow's default (NCCL)
            when every device is a GPU, and `ReductionToOneDevice()` for CPU
            devices: TensorFlow's CPU default, a collective all-reduce,
            breaks as soon as one process creates a second strategy over the
            same devices (several `kdplug run`s in a notebook, a benchmark,
            the test suite): the second reuses the first one's collective
            instance keys and a model with other weight shapes fails with
            "Shape mismatch in the collective instance".

    Examples:

    ```python
    strategy = mirrored_strategy(
        ["/cpu:0", "/cpu:1"], cross_device_ops=tf.distribute.ReductionToOneDevice())
    ```
    """
    if devices is None:
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus] or [
            d.name for d in tf.config.list_logical_devices("CPU")
        ]
    if cross_device_ops is None and not all("GPU" in d.upper() for d in devices):
        cross_device_ops = tf.distribute.ReductionToOneDevice()
    return tf.distribute.MirroredStrategy(devices, cross_device_ops=cross_device_ops)


@contextlib.contextmanager
def precision_policy(name):
    """Sets Keras' global dtype policy for a block (`training.mixed_precision`).

    `name` is `"mixed_float16"`, `"mixed_bfloat16"` or None (keep the
    current policy, normally `float32`). Models and layers created inside
    the block compute in float16 / bfloat16 and keep float32 variables; the
    previous policy is restored on exit, even after an error, so it never
    leaks into later code (or tests).

    Under `mixed_float16`, `Distiller.compile` (Keras' `compile`) wraps the
    optimizer in a `keras.optimizers.LossScaleOptimizer` (dynamic loss
    scaling); kdplug's terms cast their inputs to float32, and the Distiller
    sums them in float32.

    Examples:

    ```python
    with precision_policy("mixed_bfloat16"):
        student = build_student(...)
        distiller = Distiller(student, teacher, terms)
        distiller.compile(...)
        distiller.fit(...)
    ```
    """
    previous = keras.config.dtype_policy()
    if name is not None:
        keras.config.set_dtype_policy(name)
    try:
        yield keras.config.dtype_policy()
    finally:
        keras.config.set_dtype_policy(previous)


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


def fit_can_jit_compile(strategy):
    """Whether Keras' `fit(jit_compile=True)` works under `strategy`.

    Not with several replicas of a mirrored strategy: the XLA-compiled train
    step, optimizer update included, then reads variables held by other
    devices and fails ("Trying to access resource .../replica_1/... located
    in device CPU:1 from device CPU:0", keras-team/keras#19005; checked with
    two logical CPUs, TF 2.21 / Keras 3.15). `kdplug run` then trains with
    `CustomLoopTrainer`, which XLA-compiles each replica's forward and
    backward pass and leaves the all-reduce and the update outside XLA.
    """
    return (strategy.num_replicas_in_sync == 1
            or isinstance(strategy, tf.distribute.TPUStrategy))
