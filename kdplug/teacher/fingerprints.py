"""Content hashes that key the teacher-output cache.

A cache entry's key hashes what the teacher's outputs depend on: the
teacher's weights (`teacher_fingerprint`), the examples
(`kdplug.data.examples.examples_fingerprint`) and the tokenisation
(`encoder_fingerprint`). The hashes are stable across processes and kdplug
versions (a test pins one toy entry's key byte for byte).
"""

import hashlib
import json

import keras
import numpy as np

from kdplug.data.examples import examples_fingerprint  # noqa: F401  (re-exported)
from kdplug.models.float32_copy import policy_name

_TOKENIZER_IGNORED = ("name", "trainable", "dtype", "vocabulary", "config_file")


def teacher_fingerprint(model):
    """sha256 of a model's weight arrays (order, shapes, dtypes and bytes),
    of its `pooling` when its head reads other than [CLS] (the same
    weights pooled by the mean give other outputs; a [CLS] model's hash is
    what it was before the option) and of its dtype policy when it computes
    in other than float32 (`training.mixed_precision`).

    Weight names are left out on purpose: Keras numbers them per process
    (`dense_3`), and `trainable` flags don't change outputs.
    """
    h = hashlib.sha256(type(model).__name__.encode())
    pooling = getattr(model, "pooling", "cls")
    if pooling != "cls":
        h.update(f"pooling={pooling}".encode())
    policy = policy_name(model)
    if policy != "float32":  # the same weights computing in bfloat16 / float16
        h.update(f"policy={policy}".encode())
    for variable in model.weights:
        value = np.ascontiguousarray(keras.ops.convert_to_numpy(variable))
        h.update(f"{value.dtype}{value.shape}".encode())
        h.update(value.tobytes())
    return h.hexdigest()


def encoder_fingerprint(encoder):
    """What tokenisation depends on: vocabulary, tokenizer options, length."""
    tokenizer = encoder.tokenizer
    options = {
        k: v for k, v in tokenizer.get_config().items()
        if k not in _TOKENIZER_IGNORED
    }
    vocab = hashlib.sha256(
        "\n".join(tokenizer.get_vocabulary()).encode("utf-8")
    ).hexdigest()
    return {
        "tokenizer": type(tokenizer).__name__,
        "options": json.loads(json.dumps(options, sort_keys=True, default=str)),
        "vocabulary": vocab,
        "sequence_length": encoder.sequence_length,
        "truncate": getattr(encoder.packer, "truncate", None),
    }
