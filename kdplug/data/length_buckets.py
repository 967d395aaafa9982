"""`LengthBuckets`: the student's batches grouped by sentence length, each
cut to its longest sentence (`training.length_buckets:`); `outputs_by_length`
and `read_by_length`: a model's outputs over a whole split read the same way,
each row's put back in the split's order (the teacher-output precompute,
the prediction passes of evaluation, analysis and `kdplug predict`);
`dataset_by_length`: a padded split's batches again by length, for Keras'
validation pass."""

import copy

import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug.data.trimming import pad_tap
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
        padding_mask: `(n, seq)` array, or `(n,)` lengths (real positions
            per row, e.g. `kdplug.data.trimming.real_lengths`).
        batch_size: int >= 1.

    Returns:
        A list of int arrays; every row in exactly one, the last one shorter
        when `batch_size` does not divide `n`.

    Examples:

    >>> [b.tolist() for b in batches_by_length(np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]]), 2)]
    [[1, 2], [0]]
    >>> [b.tolist() for b in batches_by_length(np.array([3, 1, 2]), 2)]
    [[1, 2], [0]]
    """
    lengths = np.asarray(padding_mask)
    if lengths.ndim > 1:
        lengths = lengths.sum(axis=1)
    order = np.argsort(lengths, kind="stable")
    return [order[lo:lo + batch_size] for lo in range(0, len(order), int(batch_size))]


def outputs_by_length(forward, features, batch_size, multiple=8, restore=None):
    """Per-row outputs of `forward` over padded arrays in memory, read in
    batches of similar length, each cut to its longest row.

    The rows are batched by `batches_by_length` (by `features["padding_mask"]`,
    or by `kdplug.data.trimming.real_lengths` for inputs without it, e.g. a
    word-id student's alone) and each batch is cut by
    `trim_to_longest(batch, multiple)`; a batch
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
            padding mask (`kdplug.keys.PADDED_GROUPS`).
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
    n = len(next(iter(features.values())))
    size = min(int(batch_size), n)
    lengths = features.get(keys.PADDING_MASK)
    if lengths is None:
        lengths = np.asarray(real_lengths(features))
    out = {}
    for rows in batches_by_length(lengths, size):
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


def read_by_length(forward, dataset, multiple=8):
    """`outputs_by_length` over a dataset of padded batches: its examples
    read in batches of similar length, each cut to its longest one, and
    every output back in the dataset's order, per-token outputs padded back
    to the padded length (`kdplug.data.trimming.pad_tap`).

    For a prediction pass over a whole split (evaluation, validation
    metrics, analysis, `kdplug predict`): the dataset's features are read
    into memory once (its ids: `4 * sequence_length` bytes per input and
    example), sorted by length over the whole split and batched in the
    dataset's own batch size (`outputs_by_length`: one shape per width,
    `sequence_length / multiple` at most, the last batch filled up). The
    labels are the dataset's, in its order, so `(outputs, labels)` pair up
    as from a padded pass; every output equals the padded pass's within
    float tolerance wherever a model masks padding out (every kdplug model
    in eval mode), except a per-token output at padded positions, which
    holds what `pad_tap` writes (0 for `logits`) where the padded pass
    holds the model's output for a padding token (every term and metric
    reads real positions only).

    Args:
        forward: `fn(features) -> {tap name: tensor}` (`logits`,
            `hidden/<i>`, or any per-example name: `pad_tap` pads only a
            tap's token axes, `kdplug.data.trimming.token_axes`).
        dataset: batched `(features, labels, ...)` or features alone,
            every batch padded to the same length (e.g.
            `TextEncoder.dataset` without length buckets).
        multiple: int >= 1. Widths are rounded up to a multiple of this.

    Returns:
        `(outputs, labels)`: `{name: (n, ...) numpy array}` in the
        dataset's order, and its labels (numpy; None for features alone).

    Raises:
        KdplugError: the dataset is empty, or its batches are not all of
            one padded length (a dataset already cut, e.g. by
            `LengthBuckets.batch`).

    Examples:

    ```python
    ds = encoder.dataset(splits["test"], 64)          # padded
    out, labels = read_by_length(
        lambda x: {"logits": model(x, training=False)}, ds, multiple=8)
    out["logits"].shape                                # (len(test), classes)
    ```
    """
    features, rest, size = read_padded(dataset)
    length = padded_length(features)
    out = outputs_by_length(
        forward, features, size, multiple,
        restore=lambda name, value: pad_tap(value, name, length))
    return out, (rest[0] if rest else None)


def read_padded(dataset):
    """A dataset of padded batches read into memory: `(features, rest,
    batch_size)`, `features` `{name: (n, ...) numpy array}`, `rest` the
    arrays after the features in each element (labels, sample weights;
    `[]` for features alone, up to the first None) and the dataset's batch
    size (its largest batch), all in the dataset's order.

    Raises:
        KdplugError: the dataset is empty, or its batches are not all of
            one padded length (a dataset already cut, e.g. by
            `LengthBuckets.batch`).
    """
    parts, rest = {}, []
    for element in dataset:
        features, *others = element if isinstance(element, tuple) else (element,)
        others = others[:next((i for i, v in enumerate(others) if v is None),
                              len(others))]
        for i, value in enumerate(others):
            if i == len(rest):
                rest.append([])
            rest[i].append(np.asarray(value))
        for name, value in features.items():
            parts.setdefault(name, []).append(np.asarray(value))
    if not parts:
        raise KdplugError("reading in length buckets: the dataset has no batches")
    uneven = sorted(name for name, values in parts.items()
                    if len({v.shape[1:] for v in values}) > 1)
    if uneven:
        raise KdplugError(
            f"reading in length buckets needs batches padded to one length, and "
            f"{', '.join(uneven)} vary: this dataset is already cut to lengths; "
            "read it without length buckets")
    size = max(len(v) for v in next(iter(parts.values())))  # the dataset's batch
    features = {name: np.concatenate(values) for name, values in parts.items()}
    return features, [np.concatenate(values) for values in rest], size


def dataset_by_length(dataset, buckets):
    """The examples of a dataset of padded batches again, in batches of
    similar length, each cut to its longest one: for a pass that averages
    per-example values over a whole split (Keras' validation pass of
    `fit`: `val_loss`, `val_<term>`, `val_accuracy`).

    The dataset is read into memory once (`read_padded`: its ids, `4 *
    sequence_length` bytes per input and example), the whole split sorted
    by length (stable) and cut into batches of the dataset's own batch
    size, in order from short to long, not shuffled, each cut to its
    longest sentence rounded up to `buckets.multiple` (`LengthBuckets.batch`
    with one window over the split): a compiled step sees at most
    `sequence_length / multiple` widths, plus one shape for the last,
    partial batch (as a bucketed training epoch). The examples are the
    dataset's, each once, with their labels: a value Keras or kdplug
    averages over examples (a `keras.metrics.Mean` weighted by batch size,
    every Distiller term, accuracy) comes out as the padded pass's within
    float tolerance; one averaged per batch first would not (none is).

    Args:
        dataset: batched `(features, labels[, weights])` or features alone,
            every batch padded to the same length (e.g. `TextEncoder.
            dataset` without length buckets).
        buckets: the run's `LengthBuckets` (its `multiple`; its `window` is
            replaced by one window over the split).

    Returns:
        A `tf.data.Dataset` of as many batches as `dataset`.

    Raises:
        KdplugError: as `read_padded`.

    Examples:

    ```python
    val_ds = encoder.dataset(splits["validation"], 64)       # padded
    distiller.fit(train_ds, validation_data=dataset_by_length(val_ds, buckets))
    ```
    """
    features, rest, size = read_padded(dataset)
    n = len(next(iter(features.values())))
    whole = copy.copy(buckets)  # a subclass keeps its own lengths and trim
    whole.window = num_batches(n, size)
    examples = tf.data.Dataset.from_tensor_slices((features, *rest) if rest else features)
    return whole.batch(examples, size, n).prefetch(tf.data.AUTOTUNE)


def padded_length(features):
    """The padded length of `features`: the width of its `padding_mask`, or
    of the widest padding mask it holds (`kdplug.keys.PADDED_GROUPS`); None
    without one."""
    if keys.PADDING_MASK in features:
        return features[keys.PADDING_MASK].shape[1]
    return max((features[m].shape[1] for m in keys.PADDED_GROUPS if m in features),
               default=None)
