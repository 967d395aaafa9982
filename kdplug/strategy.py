"""`training.strategy` -> a `tf.distribute.Strategy`."""

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
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus] or [
            d.name for d in tf.config.list_logical_devices("CPU")
        ]
        return tf.distribute.MirroredStrategy(devices)
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
