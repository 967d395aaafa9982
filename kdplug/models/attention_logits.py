"""Pre-softmax attention scores recomputed from a layer's own projections."""

import math

import keras
from keras import ops

MASKED_SCORE = -1e9
"""The value `attention_scores/<i>` taps hold at padded key positions.

It is the same large negative number Keras' masked softmax substitutes
(-3e4 under float16), so
`softmax(scores, axis=-1)` equals the layer's attention probabilities. A loss
term comparing scores must mask these positions itself (e.g. with
`padding_mask`, or by zeroing entries `<= MASKED_SCORE / 2`).
"""


def attention_logits(attention_layer, query, key=None, padding_mask=None):
    """Pre-softmax scores `Q K^T / sqrt(d_head)` of a `MultiHeadAttention`.

    Runs the layer's own `_query_dense` and `_key_dense` projections (so the
    weights are exactly those the layer uses) and the scaled dot product, and
    sets every key position where `padding_mask` is 0 to `MASKED_SCORE`.
    Nothing of keras-hub's encoder is forked: this only *re-runs* two of its
    projections, so it costs two extra `(seq, d_model) x (d_model, d_model)`
    matmuls and one `(seq, d) x (d, seq)` matmul per layer and example
    (`4 S d_model^2 + 2 S^2 d_model` FLOPs), paid only when a caller asks for
    an `attention_scores/<i>` tap.

    Args:
        attention_layer: a built `keras.layers.MultiHeadAttention`.
        query: `(batch, seq, dim)` input the layer projects to queries.
        key: `(batch, seq, dim)` input projected to keys; defaults to `query`.
        padding_mask: optional `(batch, seq)`; 0/False marks padded keys.

    Returns:
        `(batch, heads, seq_q, seq_k)` float scores.

    Examples:

    ```python
    mha = encoder_layer._self_attention_layer
    scores = attention_logits(mha, x, padding_mask=inputs["padding_mask"])
    probs = keras.ops.softmax(scores, axis=-1)  # == the layer's attention
    ```
    """
    key = query if key is None else key
    q = attention_layer._query_dense(query)  # (B, T, N, d)
    k = attention_layer._key_dense(key)  # (B, S, N, d)
    head_dim = ops.shape(q)[-1] if q.shape[-1] is None else q.shape[-1]
    q = ops.multiply(q, ops.cast(1.0 / math.sqrt(head_dim), q.dtype))
    scores = ops.einsum("btnd,bsnd->bnts", q, k)
    return mask_padded_keys(scores, padding_mask)


def mask_padded_keys(scores, padding_mask):
    """`(batch, heads, seq_q, seq_k)` scores with every key position where
    `padding_mask` (`(batch, seq_k)`, or None: nothing masked) is 0 set to
    `MASKED_SCORE` (-3e4 under float16, which cannot hold -1e9, as Keras'
    masked softmax does)."""
    if padding_mask is None:
        return scores
    keep = ops.cast(padding_mask, "bool")[:, None, None, :]
    fill = MASKED_SCORE
    if keras.backend.standardize_dtype(scores.dtype) == "float16":
        fill = -3e4
    return ops.where(keep, scores, ops.cast(fill, scores.dtype))
