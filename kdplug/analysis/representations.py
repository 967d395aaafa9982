"""Per-layer sentence representations of a frozen model, for probing."""

import numpy as np
import tensorflow as tf
from keras import ops

from kdplug import keys
from kdplug.data.length_buckets import read_by_length
from kdplug.errors import KdplugError
from kdplug.evaluation.measure import any_batch

CLS = "cls"
MEAN = "mean"
POOLED = "pooled"
POOLINGS = (CLS, MEAN)


def representation_layers(model):
    """The layers of `model` that `sentence_representations` reads.

    A transformer (a model whose `available_taps()` has `hidden/<i>`): the
    embeddings (when tapped) and every layer, bottom to top, as
    `[("embeddings", "embeddings"), ("layer 1", "hidden/1"), ...]`. A model
    with a sentence vector only (the BiLSTM students): `[("pooled",
    "pooled")]`, the pooled state its classifier reads.

    Args:
        model: a kdplug model with `taps()` and `available_taps()`.

    Returns:
        A list of `(label, tap)` pairs.

    Examples:

    ```python
    representation_layers(tiny_bert_classifier(num_layers=2))
    # [("embeddings", "embeddings"), ("layer 1", "hidden/1"), ("layer 2", "hidden/2")]
    ```
    """
    taps = set(getattr(model, "available_taps", lambda: ())())
    hidden = sorted(int(t.split("/")[1]) for t in taps if t.startswith("hidden/"))
    if hidden:
        bottom = [("embeddings", "embeddings")] if "embeddings" in taps else []
        return bottom + [(f"layer {i}", f"hidden/{i}") for i in hidden]
    if POOLED in taps:
        return [(POOLED, POOLED)]
    raise KdplugError(
        f"{type(model).__name__} {getattr(model, 'name', '')!r} has no layer "
        "outputs to probe: it needs `hidden/<i>` taps (a transformer) or a "
        f"`pooled` tap (taps it offers: {sorted(taps) or 'none'})")


def sentence_representations(model, dataset, poolings=POOLINGS, layers=None,
                             jit_compile=True, length_buckets=None):
    """Each layer's sentence vector for every example of `dataset`.

    For a sequence output `h` (batch, seq, hidden) of a transformer layer:
    `cls` is `h[:, 0]` (the [CLS] position) and `mean` the mean of `h` over
    the positions the padding mask keeps ([CLS] and [SEP] included). A model
    whose layer is already a sentence vector (a BiLSTM's `pooled` state) has
    one representation, named `pooled`, whatever `poolings` asks. The model
    runs frozen (`training=False`), one pass per batch for every layer.

    Args:
        model: a kdplug model with `taps()`.
        dataset: batched `(features, labels)` or features alone, the inputs
            `model` reads (e.g. `TextEncoder.dataset`).
        poolings: which of `cls`, `mean` to compute for sequence outputs.
        layers: `(label, tap)` pairs (default `representation_layers(model)`).
        jit_compile: XLA-compile the forward pass.
        length_buckets: a `kdplug.data.length_buckets.LengthBuckets`: the
            (padded) dataset's examples are read in batches of similar
            length, each cut to its longest one, the vectors back in its
            order (`read_by_length`; the same vectors within float
            tolerance: both poolings read real positions only); None: the
            batches as they are.

    Returns:
        `{label: {pooling: float32 array (n, width)}}`, layers in order.

    Examples:

    ```python
    reps = sentence_representations(teacher, encoder.dataset(examples, 64))
    reps["layer 3"]["mean"].shape        # (len(examples), hidden_dim)
    ```
    """
    unknown = sorted(set(poolings) - set(POOLINGS))
    if unknown or not poolings:
        raise KdplugError(f"poolings must be a non-empty subset of {list(POOLINGS)}, "
                          f"got {list(poolings)}")
    layers = list(layers or representation_layers(model))
    taps = [tap for _, tap in layers]
    # the model's own padding mask (`student/padding_mask` for a student
    # reading its own tokenizer's encoding, `KeyedInputs`)
    mask_key = next((k for k in getattr(model, "input_keys", ())
                     if k.endswith(keys.PADDING_MASK)), keys.PADDING_MASK)

    def forward(features):
        outputs = model.taps(features, taps, training=False)
        result = {}
        for label, tap in layers:
            value = ops.cast(outputs[tap], "float32")
            if len(value.shape) == 2:
                result[f"{label}|{POOLED}"] = value
                continue
            if CLS in poolings:
                result[f"{label}|{CLS}"] = value[:, 0, :]
            if MEAN in poolings:
                mask = ops.cast(features[mask_key], "float32")[:, :, None]
                result[f"{label}|{MEAN}"] = (
                    ops.sum(value * mask, axis=1)
                    / ops.maximum(ops.sum(mask, axis=1), 1.0))
        return result

    # one trace for every batch size (the last batch is smaller)
    forward = any_batch(tf.function(forward, jit_compile=jit_compile,
                                    reduce_retracing=True, autograph=False))
    if length_buckets is not None:
        vectors, _ = read_by_length(forward, dataset, length_buckets.multiple)
    else:
        parts = {}
        for element in dataset:
            features = element[0] if isinstance(element, tuple) else element
            for key, value in forward(features).items():
                parts.setdefault(key, []).append(np.asarray(value))
        vectors = {key: np.concatenate(chunks) for key, chunks in parts.items()}
    out = {}
    for key, value in vectors.items():
        label, pooling = key.split("|")
        out.setdefault(label, {})[pooling] = value
    return {label: out[label] for label, _ in layers if label in out}
