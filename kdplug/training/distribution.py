"""`training.strategy` -> a `tf.distribute.Strategy`; mixed precision;
whether `fit` can XLA-compile under a strategy."""

import contextlib

import keras
import tensorflow as tf

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


# /proc/cpuinfo flags of x86 CPUs with bfloat16 arithmetic (Cooper Lake and
# later Xeons, Zen 4 and later: AVX512-BF16; Sapphire Rapids: AMX-BF16).
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def bf16_cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The `BF16_CPU_FLAGS` this CPU lists in `cpuinfo` (Linux); `[]` when
    it lists none or there is no such file.

    Examples:

    ```python
    bf16_cpu_flags()  # ["avx512_bf16"] on an AMD Zen 4 EPYC
    ```
    """
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            flags = set(f.read().split())
    except OSError:
        return []
    return [flag for flag in BF16_CPU_FLAGS if flag in flags]


def native_bfloat16(cpuinfo="/proc/cpuinfo"):
    """Whether this machine computes bfloat16 natively: a visible GPU of
    compute capability 8.0 or more (A100, H100, RTX 30xx on), or, with no
    GPU, a CPU whose flags (`cpuinfo`, Linux) name AVX512-BF16 or AMX-BF16
    (`bf16_cpu_flags`). Elsewhere bfloat16 is emulated and slower than
    float32.

    Examples:

    ```python
    native_bfloat16()  # True on a CPU with avx512_bf16
    ```
    """
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        capability = tf.config.experimental.get_device_details(gpus[0]).get(
            "compute_capability") or (0, 0)
        return tuple(capability) >= (8, 0)
    return bool(bf16_cpu_flags(cpuinfo))


def resolve_mixed_precision(value):
    """`training.mixed_precision` as a Keras policy name or None: `"auto"`
    is `"mixed_bfloat16"` where the machine computes bfloat16 natively
    (`native_bfloat16`: bench/precision.py measures a train step of the
    quickstart's teacher 1.4x faster than float32 on a CPU with
    AVX512-BF16) and None (float32) elsewhere; other values unchanged.

    Examples:

    ```python
    resolve_mixed_precision("auto")            # "mixed_bfloat16" or None
    resolve_mixed_precision("mixed_float16")   # "mixed_float16"
    ```
    """
    if value != "auto":
        return value
    return "mixed_bfloat16" if native_bfloat16() else None


@contextlib.contextmanager
def precision_policy(name):
    """Sets Keras' global dtype policy for a block (`training.mixed_precision`).

    `name` is `"mixed_float16"`, `"mixed_bfloat16"`, `"auto"`
    (`resolve_mixed_precision`) or None (keep the current policy, normally
    `float32`). Models and layers created inside
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
    name = resolve_mixed_precision(name)
    if name is not None:
        keras.config.set_dtype_policy(name)
    try:
        yield keras.config.dtype_policy()
    finally:
        keras.config.set_dtype_policy(previous)


def resolve_jit_compile(value):
    """`training.jit_compile` as a bool: `"auto"` (as Keras' `compile`
    resolves it for TensorFlow) is XLA where a GPU or TPU is visible and
    none on CPUs, where an XLA-compiled train step is barely faster
    (bench/length_buckets.py: 1.01-1.03x) and every new input width costs a
    compilation (8-55 s for the quickstart's models), which length buckets
    multiply.

    Examples:

    ```python
    resolve_jit_compile("auto")  # False on a CPU-only machine
    resolve_jit_compile(True)    # True
    ```
    """
    if value != "auto":
        return bool(value)
    return any(d.device_type in ("GPU", "TPU") for d in tf.config.list_logical_devices())


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
