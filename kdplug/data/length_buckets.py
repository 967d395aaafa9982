"""`LengthBuckets`: the student's batches grouped by sentence length, each
cut to its longest sentence (`training.length_buckets:`)."""

import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug.data.trimming import real_lengths
from kdplug.data.trimming import trim_to_longest
from kdplug.errors import KdplugError

# The batch order's shuffle gets a seed of its own, derived from the run's:
# two tf.data shuffles with the same seed draw the same random numbers.
BATCH_SEED_OFFSET = 1_000_003


class LengthBuckets:
    """Batches of sentences of similar length, each cut to its longest one.

    Replaces the `.batch()` of a dataset of single examples (already
    shuffled, for training). Examples are taken `window * batch_size` at a
    time; each window is sorted by length (`kdplug.data.trimming.
    real_lengths`: the real positions of every padding mask) and cut into
    `window` batches; with `shuffle` the batches are then shuffled in a
    buffer of `window` batches (seeded, deterministic, reshuffled every
    epoch), so a batch holds sentences of similar length but the batch
    order does not go from short to long. Each batch is finally cut to its
    longest sentence rounded up to `multiple`
    (`kdplug.data.trimming.trim_to_longest`: token, pair and word inputs,
    and the teacher's per-token features carried in the batch), so an
    XLA-compiled step compiles at most `sequence_length / multiple` shapes.

    Every example appears exactly once per epoch, and the number of batches
    is the plain pipeline's (`ceil(n / batch_size)`, or `floor` with
    `drop_remainder`: only the last window can leave a partial batch); the
    dataset's cardinality is asserted, so a learning-rate schedule can count
    its steps. Memory: one window of examples in the sort, plus a buffer of
    `window` batches.

    `window: 1` keeps the plain pipeline's batches (the same examples
    together, in the same order) and only trims them: per-example outputs
    are unchanged, since every model and loss term masks padding out. A
    larger window saves more (batches of similar lengths carry little
    padding) but puts sentences of similar length together in a batch,
    which the plain pipeline does not; see docs/performance.md, "Length
    buckets", for what it saves and what it changes.

    Args:
        window: int >= 1. Batches per sorting window.
        multiple: int >= 1. Trimmed lengths are rounded up to a multiple of
            this.

    Examples:

    ```python
    buckets = LengthBuckets(window=16, multiple=8)
    train_ds = encoder.dataset(splits["train"], 32, shuffle=True, seed=0,
                               length_buckets=buckets)
    # or, for single examples from anywhere:
    ds = buckets.batch(examples_ds.shuffle(n, seed=0), 32, num_examples=n,
                       shuffle=True, seed=0)
    ```
    """

    def __init__(self, window=16, multiple=8):
        for name, value in (("window", window), ("multiple", multiple)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise KdplugError(f"length buckets: {name} must be an integer >= 1, "
                                  f"got {value!r}")
        self.window = int(window)
        self.multiple = int(multiple)

    def batch(self, dataset, batch_size, num_examples, shuffle=False, seed=0,
              drop_remainder=False):
        """Batches `dataset`'s examples by length and trims each batch.

        Args:
            dataset: a `tf.data.Dataset` of single examples, `(features,
                labels[, weights])` or a features dict; `features` holds
                padded `(seq,)` inputs and their padding masks.
            batch_size: int.
            num_examples: int. Examples in `dataset` (the cardinality of
                the result is asserted from it).
            shuffle: bool. Shuffle the batches' order (seeded, every epoch
                anew); shuffle the examples before, too.
            seed: int. The run's seed.
            drop_remainder: bool. Drop the last partial batch.

        Returns:
            The batched dataset, `num_batches(...)` batches.
        """
        batch_size = int(batch_size)
        if self.window == 1:  # the plain batches, trimmed
            ds = dataset.batch(batch_size, drop_remainder=drop_remainder)
        else:
            ds = dataset.batch(self.window * batch_size)
            ds = ds.map(self._sorted_by_length, num_parallel_calls=tf.data.AUTOTUNE,
                        deterministic=True)
            ds = ds.flat_map(lambda *window: tf.data.Dataset.from_tensor_slices(
                window[0] if len(window) == 1 else window).batch(
                    batch_size, drop_remainder=drop_remainder))
            if shuffle:
                ds = ds.shuffle(self.window, seed=seed + BATCH_SEED_OFFSET,
                                reshuffle_each_iteration=True)
        ds = ds.map(self.trim, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return ds.apply(tf.data.experimental.assert_cardinality(
            num_batches(num_examples, batch_size, drop_remainder)))

    def lengths(self, features):
        """What a window is sorted by: `(batch,)` int32 lengths of a batch
        of `features` (`kdplug.data.trimming.real_lengths`). A subclass for
        other inputs overrides it with `trim`."""
        return real_lengths(features)

    def trim(self, features, *rest):
        """One batch `(features, ...)` with its features cut to the longest
        sequence (`trim_to_longest(features, multiple)`)."""
        features = trim_to_longest(features, self.multiple)
        return (features, *rest) if rest else features

    def _sorted_by_length(self, *element):
        """A window `(features, ...)` with its examples in increasing
        `lengths` (stable: equal lengths keep their order)."""
        order = tf.argsort(self.lengths(element[0]), stable=True)
        sort = lambda t: tf.gather(t, order)  # noqa: E731
        out = tuple(tf.nest.map_structure(sort, part) for part in element)
        return out if len(out) > 1 else out[0]

    def __repr__(self):
        return f"LengthBuckets(window={self.window}, multiple={self.multiple})"


def num_batches(num_examples, batch_size, drop_remainder=False):
    """Batches of `batch_size` in `num_examples` examples."""
    if drop_remainder:
        return int(num_examples) // int(batch_size)
    return -(-int(num_examples) // int(batch_size))



def batches_by_length(padding_mask, batch_size):
    """Row indices of arrays in memory, in batches of similar length: the
    rows sorted by their real positions (stable), cut every `batch_size`.

    For inference over a whole split (soft labels, decoding), where a batch
    cut to its longest row (`kdplug.data.trimming.trim_to_longest`) then
    carries little padding and each row's output is written back to its
    own index.

    Args:
        padding_mask: `(n, seq)` array.
        batch_size: int >= 1.

    Returns:
        A list of int arrays; every row in exactly one, the last one shorter
        when `batch_size` does not divide `n`.

    Examples:

    >>> [list(b) for b in batches_by_length(np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]]), 2)]
    [[1, 2], [0]]
    """
    order = np.argsort(np.asarray(padding_mask).sum(axis=1), kind="stable")
    return [order[lo:lo + batch_size] for lo in range(0, len(order), int(batch_size))]


def outputs_by_length(forward, features, batch_size, multiple=8, restore=None):
    """Per-row outputs of `forward` over padded arrays in memory, read in
    batches of similar length, each cut to its longest row.

    The rows are batched by `batches_by_length` (by `features["padding_mask"]`)
    and each batch is cut by `trim_to_longest(batch, multiple)`; a batch
    shorter than `batch_size` (the last) is filled up with its own rows
    repeated, so an XLA-compiled `forward` compiles one shape per width
    (at most `sequence_length / multiple`) and none for the remainder. Each
    row's outputs are written back to its own index: the result is in the
    order of `features`, equal to a padded pass's wherever `forward`'s
    per-row outputs do not depend on padding (every model in eval mode:
    they mask it out) and the batch (no batch statistics).

    Args:
        forward: `fn({name: (batch, width) tensor}) -> {name: tensor}`.
        features: `{name: (n, seq) array}`, padded on the right, with a
            `padding_mask`.
        batch_size: int >= 1 (at most `n` is used).
        multiple: int >= 1. Widths are rounded up to a multiple of this.
        restore: optional `fn(name, (batch, ...) array) -> array` applied
            to each output of a batch before it is stored (e.g. padding
            per-token outputs back to `seq`); default: as it is.

    Returns:
        `{name: (n, ...) numpy array}`.

    Examples:

    ```python
    x = encoder.encode_examples(examples)
    logits = outputs_by_length(lambda b: {"logits": model(b, training=False)},
                               x, 64)["logits"]
    ```
    """
    n = len(features[keys.PADDING_MASK])
    size = min(int(batch_size), n)
    out = {}
    for rows in batches_by_length(features[keys.PADDING_MASK], size):
        filled = np.resize(rows, size)  # a short batch repeats its rows
        batch = trim_to_longest({k: tf.constant(v[filled]) for k, v in features.items()},
                                multiple)
        for name, value in forward(batch).items():
            value = np.asarray(value)[:len(rows)]
            if restore is not None:
                value = restore(name, value)
            if name not in out:
                out[name] = np.empty((n, *value.shape[1:]), value.dtype)
            out[name][rows] = value
    return out
