"""BERT-style masking for masked-language-modelling terms, inside `tf.data`.

`mask_tokens` masks one batch (stateless, so a seed fixes the result);
`apply_masking` maps it over a dataset with a fresh, deterministic seed per
batch (and per epoch); `stage_dataset` is what the training runner calls for
each stage: it drops the labels of an `unlabelled` stage and masks the
batches when one of the stage's terms asks for it (a term asks by carrying a
`masking` dict of options, as `kdplug.terms.MaskedLMLoss` does).

Examples:

```python
ds = apply_masking(train_ds, seed=0, vocabulary_size=30522,
                   mask_token_id=103, special_token_ids=[0, 101, 102])
features, labels = next(iter(ds))
features["mask_positions"], features["mask_ids"], features["mask_weights"]
```
"""

import math

import tensorflow as tf

from kdplug import keys
from kdplug.errors import KdplugError

STAGE_DATA = ("task", "unlabelled")


def mask_tokens(token_ids, padding_mask, seed, *, vocabulary_size, mask_token_id,
                special_token_ids=(), max_predictions=None, mask_rate=0.15,
                mask_token_rate=0.8, random_token_rate=0.1):
    """Masks a batch of token ids as BERT does (Devlin et al. 2019).

    In every example, `max(1, round(mask_rate * n))` of the `n` eligible
    tokens (capped at `max_predictions`) are chosen uniformly at random.
    Eligible means a real token (`padding_mask != 0`), not one of
    `special_token_ids` ([CLS], [SEP], [PAD]) and not [MASK]. Of the chosen
    tokens, `mask_token_rate` become [MASK], `random_token_rate` become a
    token drawn uniformly from the vocabulary *minus* the special tokens and
    [MASK], and the rest stay unchanged. The result depends only on the
    inputs and `seed` (stateless random ops).

    Args:
        token_ids: int tensor `(batch, seq)`.
        padding_mask: tensor `(batch, seq)`, nonzero for real tokens.
        seed: int tensor of shape `(2,)` (a stateless-random seed).
        vocabulary_size: int.
        mask_token_id: int. The [MASK] id.
        special_token_ids: ids never selected nor drawn as random tokens.
        max_predictions: int. Prediction slots per example `P`; None means
            `ceil(seq * mask_rate)`. At most `seq`; with a `seq` known only
            at run time (batches cut to their longest sentence, see
            `kdplug.data.length_buckets`) `P` is computed per batch.
        mask_rate, mask_token_rate, random_token_rate: float. BERT's
            0.15 / 0.8 / 0.1.

    Returns:
        A dict: `token_ids` (masked, same dtype as the input),
        `mask_positions` and `mask_ids` (`(batch, P)` int32; selected
        positions in increasing order, padding slots point at position 0),
        `mask_weights` (`(batch, P)` float32, 1.0 for a real prediction).

    Examples:

    ```python
    out = mask_tokens(ids, mask, tf.constant([0, 1]), vocabulary_size=64,
                      mask_token_id=3, special_token_ids=[0, 1, 2])
    ```
    """
    token_ids = tf.convert_to_tensor(token_ids)
    ids = tf.cast(token_ids, tf.int32)
    seq = ids.shape[-1]
    if seq is not None:  # a static length: P as a Python int
        if max_predictions is None:
            max_predictions = max(1, math.ceil(seq * mask_rate))
        max_predictions = min(int(max_predictions), seq)
    else:  # batches cut to their longest sentence: P follows each batch's length
        max_predictions = _slots(tf.shape(ids)[1], mask_rate, max_predictions)
    excluded = sorted(
        {int(i) for i in [*special_token_ids, mask_token_id]
         if 0 <= int(i) < vocabulary_size}
    )
    seeds = tf.random.experimental.stateless_split(
        tf.cast(seed, tf.int64), num=3
    )
    batch = tf.shape(ids)[0]
    length = tf.shape(ids)[1]

    eligible = tf.not_equal(tf.cast(padding_mask, tf.int32), 0)
    for token in excluded:
        eligible &= tf.not_equal(ids, token)
    n_eligible = tf.reduce_sum(tf.cast(eligible, tf.int32), axis=-1)
    wanted = tf.cast(tf.round(tf.cast(n_eligible, tf.float32) * mask_rate), tf.int32)
    n_mask = tf.minimum(tf.minimum(tf.maximum(wanted, 1), max_predictions), n_eligible)

    scores = tf.random.stateless_uniform([batch, length], seed=seeds[0])
    scores = tf.where(eligible, scores, -1.0)
    _, order = tf.math.top_k(scores, k=max_predictions)
    slots = tf.range(max_predictions)[None, :]
    selected = slots < n_mask[:, None]
    # Selected positions first, in increasing order; padding slots after.
    keys = tf.sort(tf.where(selected, order, length + slots), axis=-1)
    weights = keys < length
    positions = tf.where(weights, keys, 0)
    mask_ids = tf.gather(ids, positions, batch_dims=1)

    choice = tf.random.stateless_uniform([batch, max_predictions], seed=seeds[1])
    random_ids = tf.random.stateless_uniform(
        [batch, max_predictions], seed=seeds[2], minval=0,
        maxval=vocabulary_size - len(excluded), dtype=tf.int32,
    )
    for token in excluded:  # ascending: maps [0, V - S) onto the non-special ids
        random_ids += tf.cast(random_ids >= token, tf.int32)
    replacement = tf.where(
        choice < mask_token_rate,
        tf.fill(tf.shape(mask_ids), tf.cast(mask_token_id, tf.int32)),
        tf.where(choice < mask_token_rate + random_token_rate, random_ids, mask_ids),
    )
    hits = tf.one_hot(positions, length, dtype=tf.int32) * tf.cast(
        weights, tf.int32
    )[..., None]
    chosen = tf.reduce_max(hits, axis=1) > 0
    values = tf.reduce_sum(hits * replacement[..., None], axis=1)
    masked = tf.where(chosen, values, ids)
    return {
        "token_ids": tf.cast(masked, token_ids.dtype),
        "mask_positions": positions,
        "mask_ids": mask_ids,
        "mask_weights": tf.cast(weights, tf.float32),
    }


def _slots(length, mask_rate, max_predictions):
    """Prediction slots of a batch whose length is known only when it runs
    (`length`, a scalar tensor): `ceil(length * mask_rate)` or
    `max_predictions`, at most `length`. A batch masks as many tokens per
    example as it would padded: they never exceed its real tokens."""
    if max_predictions is None:
        slots = tf.cast(tf.math.ceil(tf.cast(length, tf.float32) * mask_rate), tf.int32)
        slots = tf.maximum(slots, 1)
    else:
        slots = tf.constant(int(max_predictions), tf.int32)
    return tf.minimum(slots, length)


def apply_masking(dataset, *, seed, vocabulary_size, mask_token_id,
                  special_token_ids=(), rerandomize=True, **options):
    """Masks every batch of a `(features, labels[, weights])` dataset.

    Each batch gets its own seed from `tf.data.Dataset.random(seed)`; with
    `rerandomize=True` every epoch draws new masks (RoBERTa's dynamic
    masking), still deterministic for a given `seed`. Use
    `rerandomize=False` for validation data.

    Args:
        dataset: batched dataset whose features hold `token_ids` and
            `padding_mask`.
        seed: int.
        vocabulary_size, mask_token_id, special_token_ids: see
            `mask_tokens`.
        rerandomize: new masks every epoch.
        **options: `max_predictions`, `mask_rate`, `mask_token_rate`,
            `random_token_rate` (see `mask_tokens`).

    Examples:

    ```python
    ds = apply_masking(ds, seed=0, vocabulary_size=64, mask_token_id=3,
                       special_token_ids=[0, 1, 2])
    ```
    """
    seeds = tf.data.Dataset.random(
        seed=seed, rerandomize_each_iteration=rerandomize
    ).batch(2)

    def mask(element, pair_seed):
        features, *rest = element if isinstance(element, tuple) else (element,)
        features = dict(features)
        features.update(
            mask_tokens(
                features["token_ids"], features["padding_mask"], pair_seed,
                vocabulary_size=vocabulary_size, mask_token_id=mask_token_id,
                special_token_ids=special_token_ids, **options,
            )
        )
        return (features, *rest) if rest else features

    return tf.data.Dataset.zip((dataset, seeds)).map(
        mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )


def drop_labels(dataset):
    """Replaces every label by `-1` ("no gold label") in `(x, y[, w])` batches.

    Terms and metrics then ignore the labels (see `kdplug.terms.label_mask`).
    """

    def drop(features, labels, *rest):
        return (features, tf.fill(tf.shape(labels), tf.constant(-1, labels.dtype)),
                *rest)

    return dataset.map(drop, num_parallel_calls=tf.data.AUTOTUNE)


def needs_masking(terms):
    """The masking options asked for by `terms` (a term's `masking` dict), or None.

    Raises `KdplugError` when two terms ask for different masking.
    """
    found = None
    for term in terms:
        options = getattr(term, "masking", None)
        if options is None:
            continue
        options = dict(options)
        if found is not None and options != found:
            raise KdplugError(
                f"loss terms ask for different masking: {found} and {options}"
            )
        found = options
    return found


def stage_dataset(dataset, stage, tokenizer, seed, training=True):
    """The dataset one stage trains (or validates) on.

    - `stage.data` `"unlabelled"` (or a `TextCorpus`) and `training`:
      labels become `-1`.
    - A term with a `masking` dict (e.g. `MaskedLMLoss`): batches are masked
      with `tokenizer`'s [MASK] id; [CLS], [SEP] and [PAD] are never masked.
      Training batches get new masks every epoch, validation batches
      (`training=False`) the same masks every time.

    Masking changes the inputs the teacher sees, so cached teacher outputs
    (`teacher/<tap>` features) cannot be combined with it.

    Args:
        dataset: batched `(features, labels)` dataset (e.g. from
            `TextEncoder.dataset`).
        stage: a `kdplug.Stage`.
        tokenizer: has `vocabulary_size()`, `mask_token_id`,
            `cls_token_id`, `sep_token_id`, `pad_token_id` (a keras-hub
            `BertTokenizer`).
        seed: int.
        training: whether this is the training split.

    Examples:

    ```python
    train = stage_dataset(train_ds, stage, encoder.tokenizer, seed=cfg.seed)
    val = stage_dataset(val_ds, stage, encoder.tokenizer, seed=cfg.seed,
                        training=False)
    ```
    """
    if isinstance(stage.data, str) and stage.data not in STAGE_DATA:
        raise KdplugError(
            f"stage {stage.name!r}: data must be one of {STAGE_DATA} or a "
            f"kdplug.data.TextCorpus, got {stage.data!r}"
        )
    if training and stage.data != "task":  # unlabelled, or a corpus
        dataset = drop_labels(dataset)
    options = needs_masking(stage.terms)
    if options is None:
        return dataset
    spec = dataset.element_spec
    features = spec[0] if isinstance(spec, tuple) else spec
    cached = sorted(k for k in features if keys.is_teacher_key(k))
    if cached:
        raise KdplugError(
            f"stage {stage.name!r} masks its inputs for a masked-LM term, but "
            f"the batches carry cached teacher outputs {cached} computed on "
            "unmasked inputs; disable the teacher-output cache for this stage"
        )
    special = [tokenizer.cls_token_id, tokenizer.sep_token_id,
               tokenizer.pad_token_id]
    return apply_masking(
        dataset,
        seed=seed,
        vocabulary_size=tokenizer.vocabulary_size(),
        mask_token_id=tokenizer.mask_token_id,
        special_token_ids=[i for i in special if i is not None],
        rerandomize=training,
        **options,
    )
