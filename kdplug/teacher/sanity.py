"""Whether a loaded teacher computes at all: a checkpoint whose weights are
NaN or Inf gives NaN outputs for every input, and would otherwise surface
as a NaN loss at the first training step, blamed on the learning rate."""

import keras
import numpy as np
import tensorflow as tf

from kdplug.errors import ConfigError

# What the teacher reads once, before any training: one plain sentence,
# encoded as the run encodes its data.
PROBE = "a short plain sentence to check the teacher"


def check_finite_outputs(teacher, encoder, config):
    """Runs the teacher on a first batch (`PROBE`, encoded by the run's
    `encoder`) and raises `ConfigError` naming `teacher.source` when an
    output is NaN or Inf: the checkpoint is broken (the error names its
    first non-finite weight), which no learning rate fixes.

    Args:
        teacher: the model `load_teacher` returned (before fine-tuning).
        encoder: the run's `TextEncoder` for the teacher's tokenizer.
        config: the run's `ExperimentConfig` (for the message).

    Examples:

    ```python
    teacher, tokenizer, source = load_teacher(config.teacher, 2, config.resolve_path)
    check_finite_outputs(teacher, TextEncoder(tokenizer, 64), config)
    ```
    """
    outputs = teacher(encoder(tf.constant([PROBE])), training=False)
    if all(_finite(value) for value in tf.nest.flatten(outputs)):
        return
    weight = next((w.path for w in teacher.weights if not _finite(w)), None)
    held = f"its weight {weight} holds NaN or Inf" if weight else (
        "its weights are finite, but its outputs overflow")
    raise ConfigError(
        f"the teacher gives NaN or Inf outputs before any training ({held}): the "
        "checkpoint is broken, and no learning rate fixes that; export or download "
        "it again, or point teacher.source at another one",
        config.file, "teacher.source", config.teacher.source)


def _finite(value):
    array = keras.ops.convert_to_numpy(value)
    return not np.issubdtype(array.dtype, np.floating) or bool(np.isfinite(array).all())
