"""How a sentence head reads the last layer: its [CLS] vector, or the mean
of every real (non-padding) position.

kdplug's sentence classifiers (`BertClassifier`, `HubTextClassifier`,
`BottleneckBertClassifier`, FastBERT's exit branches) take `pooling="cls"`
(the default, as keras-hub's and Hugging Face's classifiers) or
`pooling="mean"` (what sentence-transformers checkpoints such as the
packaged MiniLM-L6 all-* weights were trained with). The pooled vector then
goes through the model's pooler (`pooled_dense`) and classifier either way.

Examples:

```python
sentence = pool_sequence(x, inputs["padding_mask"], "mean")  # (batch, hidden)
```
"""

from keras import ops

POOLINGS = ("cls", "mean")
# The head taps that read the pooled vector.
HEAD_TAPS = frozenset({"pooled", "logits"})


def check_pooling(pooling, per_token=False):
    """Returns `pooling` when a model can build it, else raises `ValueError`:
    an unknown name, or `"mean"` on a per-token head (token classification
    classifies every position; no sentence vector is pooled)."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if per_token and pooling != "cls":
        raise ValueError(
            f"pooling={pooling!r} pools a sentence for a sentence head; a per_token "
            "head classifies every position, so it takes pooling='cls'")
    return pooling


def pool_sequence(x, padding_mask, pooling):
    """The sentence vector of `x` `(batch, seq, hidden)`: `x[:, 0]` for
    `"cls"`, or for `"mean"` the mean over the positions where
    `padding_mask` `(batch, seq)` is true (accumulated in float32, returned
    in `x`'s dtype; a row without tokens pools to zeros)."""
    if pooling == "cls":
        return x[:, 0, :]
    if padding_mask is None:
        raise ValueError("pooling='mean' needs the padding_mask")
    mask = ops.cast(padding_mask, "float32")[:, :, None]
    total = ops.sum(ops.cast(x, "float32") * mask, axis=1)
    mean = total / ops.maximum(ops.sum(mask, axis=1), 1.0)
    return ops.cast(mean, x.dtype)


def reads_every_position(pooling, per_token=False):
    """The head taps that read every position of the top layer (so it
    cannot run for its [CLS] position alone, `cls_only_layer`): `pooled`
    and `logits` with mean pooling, `logits` of a per-token head."""
    names = set(HEAD_TAPS) if pooling == "mean" else set()
    if per_token:
        names.add("logits")
    return names
