"""Conditional masked language modelling (C-MLM) inputs: masking only the
target of `[CLS] source [SEP] target [SEP]`.

Chen et al. (2020)'s recipe (their reference code, `cmlm/data.py`): every
target word piece, and the final [SEP] (the end of the sentence), is
replaced by [MASK] independently with probability 0.15 (always [MASK]: no
random or kept tokens, unlike BERT's 80/10/10); the source is never
masked; an example is drawn again until at least one position is masked.
The loss reads the masked positions only.

Examples:

```python
masked, positions, labels = cmlm_mask(token_ids, target_mask, seed=(0, 1),
                                      rate=0.15, mask_token_id=103, budget=16)
ds = cmlm_dataset(arrays, batch_size=32, mask_token_id=103, rate=0.15,
                  budget=16, seed=0, shuffle=True)
```
"""

import math

import tensorflow as tf

from kdplug import keys
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk

MASK_RATE = 0.15  # the paper's recipe
TRIES = 16  # draws per example before falling back to one masked position


def mask_budget(max_target_length, rate):
    """How many masked positions of one example the loss reads.

    keras-hub's masked-LM head takes a fixed number of `mask_positions` per
    example; the number masked is Binomial(`max_target_length + 1`, `rate`),
    so the budget is its mean plus six standard deviations (a longer draw
    happens about once in a billion examples; its extra positions are left
    unmasked), never more than the target's positions.
    """
    n = max_target_length + 1
    mean, sd = rate * n, math.sqrt(n * rate * (1.0 - rate))
    return max(1, min(n, math.ceil(mean + 6.0 * sd) + 1))


def cmlm_mask(token_ids, target_mask, seed, rate=MASK_RATE, mask_token_id=103,
              budget=None, tries=TRIES):
    """Masks target positions of a batch of C-MLM inputs.

    Each position with `target_mask == 1` becomes `mask_token_id` with
    probability `rate`, independently; a row with no masked position is
    drawn again (up to `tries` draws, then one target position is masked at
    random), which is the reference code's "draw until one is masked".
    Deterministic: the same `seed` gives the same masks.

    Args:
        token_ids: int `(batch, length)`.
        target_mask: `(batch, length)`, 1 where masking is allowed.
        seed: two integers (a stateless random seed).
        rate: float. The masking probability.
        mask_token_id: int. The tokenizer's [MASK] id.
        budget: int. Masked positions kept per row (`mask_budget`); None:
            `length`.
        tries: int.

    Returns:
        `(masked_ids, mask_positions, labels)`: the inputs with [MASK]
        written in; `(batch, budget)` the masked positions in order (0 where
        unused); `(batch, budget)` the original ids there (-1 where unused).
    """
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    target = tf.cast(target_mask, tf.bool)
    batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    budget = budget or token_ids.shape[1]
    seed = tf.cast(tf.reshape(seed, [2]), tf.int64)
    u = tf.random.stateless_uniform(tf.stack([tries, batch, length]), seed=seed)
    hits = tf.logical_and(u < rate, target[None])
    hit_rows = tf.reduce_any(hits, axis=2)  # (tries, batch)
    first = tf.argmax(tf.cast(hit_rows, tf.int32), axis=0, output_type=tf.int32)
    chosen = tf.gather(tf.transpose(hits, [1, 0, 2]), first, batch_dims=1)
    never = tf.logical_not(tf.reduce_any(hit_rows, axis=0))
    one = tf.one_hot(tf.argmin(tf.where(target, u[0], 2.0), axis=1,
                               output_type=tf.int32), length,
                     on_value=True, off_value=False, dtype=tf.bool)
    chosen = tf.where(never[:, None], tf.logical_and(one, target), chosen)
    rank = tf.cumsum(tf.cast(chosen, tf.int32), axis=1)
    chosen = tf.logical_and(chosen, rank <= budget)
    masked = tf.where(chosen, tf.cast(mask_token_id, tf.int32), token_ids)
    index = tf.range(length)[None, :]
    order = tf.sort(tf.where(chosen, index, length + index), axis=1)[:, :budget]
    valid = order < length
    positions = tf.where(valid, order, 0)
    labels = tf.where(valid, tf.gather(token_ids, positions, batch_dims=1), -1)
    return masked, positions, labels


def cmlm_dataset(arrays, batch_size, mask_token_id, rate=MASK_RATE, budget=None,
                 seed=0, shuffle=False, redraw=None, length_buckets=None):
    """`(features, labels)` batches for a keras-hub `*MaskedLM` teacher.

    Features: `token_ids` (masked), `segment_ids`, `padding_mask`,
    `mask_positions`; labels: the original ids at those positions (-1 where
    unused). With `redraw`, every pass over the dataset (epoch) draws new
    masks (and, with `shuffle`, a new order), reproducibly from `seed`;
    without, every pass has the same masks (validation).

    Args:
        arrays: `Seq2SeqEncoder.teacher_arrays(...)`.
        batch_size: int.
        mask_token_id: int.
        rate: float.
        budget: int (see `mask_budget`).
        seed: int.
        shuffle: bool.
        redraw: bool; None: as `shuffle` (training redraws, evaluation
            does not).
        length_buckets: a `kdplug.data.length_buckets.LengthBuckets`:
            batches of similar lengths, each cut to its longest `[CLS]
            source [SEP] target [SEP]` before masking; None: every batch
            padded to the full length.
    """
    redraw = shuffle if redraw is None else redraw
    names = (keys.TOKEN_IDS, keys.SEGMENT_IDS, keys.PADDING_MASK, sk.TARGET_MASK)
    ds = tf.data.Dataset.from_tensor_slices({k: arrays[k] for k in names})
    if shuffle:
        ds = ds.shuffle(len(arrays[keys.TOKEN_IDS]), seed=seed,
                        reshuffle_each_iteration=True)
    if length_buckets is None:
        ds = ds.batch(batch_size)
    else:
        ds = length_buckets.batch(ds, batch_size, len(arrays[keys.TOKEN_IDS]),
                                  shuffle=shuffle, seed=seed)
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=redraw)
    ds = tf.data.Dataset.zip((ds, seeds.batch(2)))

    def mask(batch, pair):
        ids = batch[keys.TOKEN_IDS]  # the target mask is cut with the ids
        masked, positions, labels = cmlm_mask(
            ids, batch[sk.TARGET_MASK][:, :tf.shape(ids)[1]], pair, rate,
            mask_token_id, budget)
        return {keys.TOKEN_IDS: masked, keys.SEGMENT_IDS: batch[keys.SEGMENT_IDS],
                keys.PADDING_MASK: batch[keys.PADDING_MASK],
                sk.MASK_POSITIONS: positions}, labels

    return ds.map(mask, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)
