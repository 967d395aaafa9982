"""Cutting a batch's padding: every padded input to the batch's longest
sequence, teacher features carried in the batch along with it.

Inputs are padded on the right to `data.sequence_length`. Positions past a
batch's longest sequence are padding in every example, and every model and
loss term masks padding out (attention masks padded keys, LSTMs skip masked
steps, per-token terms average over real tokens only), so a batch cut to
its longest sequence gives the same per-example outputs for less work.
`trim_to_longest` is the one implementation, used by the teacher pipeline
(`kdplug.teacher.pipeline`) and by the student's length buckets
(`kdplug.data.length_buckets`); `pad_tap` puts an output computed on a cut
batch back to the padded length (the teacher-output cache, predictions
read in length buckets).
"""

import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug.models.attention_logits import MASKED_SCORE

# Teacher taps with one vector per token, `(batch, seq, width)`, and attention
# maps, `(batch, heads, seq, seq)`: cut along the token axes.
TOKEN_TAPS = ("embeddings", "hidden/")
ATTENTION_TAPS = ("attention/", "attention_scores/")


def token_axes(tap, rank=None):
    """The axes of teacher tap `tap` that run over the token positions.

    Args:
        tap: a tap name (`logits`, `hidden/3`, `attention_scores/2`, ...).
        rank: the tap's rank with the batch axis, when known: `logits` of
            rank 3 are per-token (`(batch, seq, outputs)`: token
            classification, extractive QA's start and end).

    Returns:
        `(1,)` for `embeddings`, `hidden/<i>` and per-token `logits`,
        `(2, 3)` for `attention/<i>` and `attention_scores/<i>`, `()` for
        everything else (per-example taps: `logits`, `pooled`, `cls/<i>`,
        and any tap kdplug does not know, which is never cut).

    Examples:

    >>> token_axes("hidden/2"), token_axes("attention_scores/1"), token_axes("logits")
    ((1,), (2, 3), ())
    >>> token_axes("logits", rank=3)
    (1,)
    """
    if (tap == TOKEN_TAPS[0] or tap.startswith(TOKEN_TAPS[1])
            or (tap == "logits" and rank == 3)):
        return (1,)
    if tap.startswith(ATTENTION_TAPS):
        return (2, 3)
    return ()


def real_lengths(features, groups=keys.PADDED_GROUPS):
    """Real positions of each example, `(batch,)` int32: the sum of every
    padding mask of `groups` in `features` (zeros when there is none). One
    number per example to sort a batch or a window by."""
    masks = [real_count(features[m]) for m in groups if m in features]
    if not masks:
        first = next(iter(features.values()))
        return tf.zeros(tf.shape(first)[:1], "int32")
    return tf.add_n(masks)


def trimmed_length(mask, multiple=8):
    """The length a batch with padding mask `mask` `(batch, seq)` is cut to:
    its longest sequence rounded up to `multiple`, at least 1 and at most
    `seq` (a scalar int32 tensor)."""
    seq = tf.shape(mask)[1]
    longest = tf.reduce_max(real_count(mask))
    length = tf.minimum(seq, (longest + multiple - 1) // multiple * multiple)
    return tf.maximum(length, 1)


def trim_to_longest(features, multiple=8, groups=keys.PADDED_GROUPS):
    """A batch's padded inputs cut to the batch's longest sequence.

    Each padding mask of `groups` (default `keys.PADDED_GROUPS`) present in
    `features` cuts itself and its ids to its own longest sequence rounded up to `multiple`
    (at most the padded length): the teacher's `token_ids` / `segment_ids` /
    `padding_mask`, a pair's per-sentence `token_ids_a` / `_b`, a word
    student's `word_ids` (and `_b`). Teacher features carried in the batch
    that run over the tokens (`teacher/embeddings`, `teacher/hidden/<i>`:
    axis 1; `teacher/attention/<i>`, `teacher/attention_scores/<i>`: axes 2
    and 3, see `token_axes`) are cut to the length of `padding_mask`, the
    encoding the teacher read, so they stay aligned with a student reading
    the same tokens. Everything else (labels, per-example taps, masking
    targets) is kept as it is. Padding is assumed on the right.

    With lengths rounded to `multiple`, an XLA-compiled step sees at most
    `sequence_length / multiple` shapes, each compiled once.

    Args:
        features: dict of batched tensors.
        multiple: int >= 1.
        groups: `{padding mask key: (ids keys it marks)}`; other inputs
            (e.g. a seq2seq batch's source and target) name their own.

    Returns:
        A new dict with the same keys.

    Examples:

    ```python
    x = {"token_ids": ids, "segment_ids": seg, "padding_mask": mask,
         "teacher/hidden/2": h}            # (32, 48), (32, 48, 384)
    short = trim_to_longest(x, 8)          # longest sentence 19 tokens
    short["token_ids"].shape[1], short["teacher/hidden/2"].shape[1]   # 24, 24
    ```
    """
    out = dict(features)
    lengths = {}
    for mask_key, ids in groups.items():
        if mask_key not in features:
            continue
        length = lengths[mask_key] = trimmed_length(features[mask_key], multiple)
        for key in (mask_key, *ids):
            if key in out:
                out[key] = out[key][:, :length]
    if keys.PADDING_MASK in lengths:
        length = lengths[keys.PADDING_MASK]
        for tap in keys.teacher_taps(features):
            key = keys.teacher_key(tap)
            axes = token_axes(tap, len(features[key].shape))
            if axes == (1,):
                out[key] = out[key][:, :length]
            elif axes == (2, 3):
                out[key] = out[key][:, :, :length, :length]
    return out


def real_count(mask):
    """Nonzero entries of each row of a `(batch, seq)` mask, int32."""
    return tf.reduce_sum(tf.cast(tf.cast(mask, "bool"), "int32"), axis=-1)


def pad_tap(value, tap, length):
    """A batch of tap `tap` computed on inputs cut to a shorter width,
    padded back along its token axes (`token_axes`) to `length`, as a
    padded batch stores it.

    Positions past the cut are padding in every example of the batch, and
    hold what the padded teacher gives a masked key: 0 in `attention/<i>`,
    `MASKED_SCORE` in `attention_scores/<i>` (whole rows of them for the
    padded queries), 0 in `embeddings` and `hidden/<i>`. So every masked
    key of an attention map is stored exactly as padded; a padded position's
    own hidden state and a padded query's scores of the real keys, which
    the padded teacher computes from the padding token, are not: every
    term and model masks those positions out. Per-token `logits` (rank 3)
    get 0 there too: the terms and metrics read real positions only
    (`kdplug.terms.span_positions`, labels `-1` on padding).

    Args:
        value: `(batch, ...)` numpy array of the tap.
        tap: the tap's name.
        length: the padded length (`data.sequence_length`).

    Returns:
        `value` padded to `length` on every token axis (unchanged for
        per-example taps such as a sentence's `logits`).

    Examples:

    >>> pad_tap(np.ones((1, 2, 3)), "hidden/1", 4)[0, :, 0].tolist()
    [1.0, 1.0, 0.0, 0.0]
    """
    axes = token_axes(tap, value.ndim)
    if not axes:
        return value
    widths = [(0, 0)] * value.ndim
    for axis in axes:
        widths[axis] = (0, length - value.shape[axis])
    fill = 0
    if tap.startswith("attention_scores/"):
        fill = -3e4 if value.dtype == np.float16 else MASKED_SCORE  # as mask_padded_keys
    return np.pad(value, widths, constant_values=fill)
