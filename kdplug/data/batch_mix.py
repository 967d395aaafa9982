"""`BatchMix`: how far a stream's batches are from random samples of their
split, measured on the labels of the batches a stage trains on."""

import collections
import math
import threading

import numpy as np

# A batch is "dominated" when one class holds at least this share of it.
DOMINATED_SHARE = 0.9
# What each `Task.label_kind` gives a per-example label vector as.
KINDS = {"class": "classes", "float": "values", "multi": "vectors"}
# Too few batches say nothing about a stream's order.
MIN_BATCHES = 4


class BatchMix:
    """The label mix of a stream of training batches, against random batches.

    Every example's label becomes a vector `v` (one-hot for class ids, the
    number itself for regression, the 0/1 row for multi-label); a batch of
    `n` examples has the mean `m_b` of its vectors. Over an epoch of `B`
    batches and `N` examples, the **dispersion** is the variance of the
    batch means around their average, `D = mean_b |m_b - mean(m)|^2`. For
    batches that are random samples of the split (drawn without
    replacement), its expectation is `E = s^2 / n * (N - n) / (N - 1)`,
    where `s^2` is the total per-example variance of `v`, summed over its
    components. The **ratio** `D / E` is then about 1; a stream sorted by
    label gives up to `n` (every batch one class). For class ids the share
    of batches with one class at `DOMINATED_SHARE` or more is recorded too,
    beside its binomial expectation for random batches of that size.

    `far_from_random()` is True when the ratio is above
    `1 + 5 * sqrt(2 / df)` (at least 1.5), `df = (C - 1) * (B - 1)`: five
    standard deviations of the ratio's sampling spread for random batches.

    Args:
        kind: `"classes"`, `"values"` or `"vectors"` (`KINDS` maps a task's
            `label_kind` to it), `"auto"` (from the first batch: integer
            ids are classes, one number per example a value, rows of
            numbers vectors; integer rows, e.g. token tags, are skipped),
            or None to skip with `reason`.
        reason: why the mix is not measured (shown in the report).

    Examples:

    >>> mix = BatchMix("classes")
    >>> for batch in ([0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1]):
    ...     mix.add(np.array(batch))
    >>> round(mix.summary()["ratio"], 2), mix.summary()["dominated_batches"]
    (5.0, 1.0)
    """

    def __init__(self, kind="classes", reason=None):
        if kind is not None and kind not in (*KINDS.values(), "auto"):
            raise ValueError(f"BatchMix kind must be one of {sorted(KINDS.values())}, "
                             f"'auto' or None, got {kind!r}")
        self.kind = kind
        self.reason = reason if kind is None else None
        self.batches = 0
        self.examples = 0
        self.sum_means = np.zeros(0)      # sum over batches of m_b
        self.sum_mean_sq = 0.0            # sum over batches of |m_b|^2
        self.sum_vectors = np.zeros(0)    # sum over examples of v
        self.sum_vector_sq = 0.0          # sum over examples of |v|^2
        self.sum_inverse_size = 0.0       # sum over batches of 1 / n_b
        self.dominated = 0
        self.sizes = collections.Counter()  # batches per size (binomial term)
        self._lock = threading.Lock()

    @classmethod
    def for_task(cls, task):
        """The mix for a run's `kdplug.tasks.Task` (None: a run without a
        single task kind, e.g. multi-task or seq2seq)."""
        label_kind = getattr(task, "label_kind", None)
        if label_kind in KINDS:
            return cls(KINDS[label_kind])
        what = f"{task.name} labels" if task is not None else "this method's labels"
        return cls(None, reason=f"not measured for {what} (no label per example)")

    # ------------------------------------------------------------- counting
    def add(self, labels):
        """Counts one batch of labels (a numpy array)."""
        if self.kind is None:
            return
        vectors = self._vectors(np.asarray(labels))
        if vectors is None or not len(vectors):
            return
        with self._lock:
            width = vectors.shape[1]
            if width > len(self.sum_means):
                self.sum_means = _grown(self.sum_means, width)
                self.sum_vectors = _grown(self.sum_vectors, width)
            mean = vectors.mean(axis=0)
            self.sum_means[:width] += mean
            self.sum_mean_sq += float(mean @ mean)
            self.sum_vectors[:width] += vectors.sum(axis=0)
            self.sum_vector_sq += float((vectors * vectors).sum())
            self.sum_inverse_size += 1.0 / len(vectors)
            self.batches += 1
            self.examples += len(vectors)
            self.sizes[len(vectors)] += 1
            if self.kind == "classes" and mean.max() >= DOMINATED_SHARE:
                self.dominated += 1

    def _vectors(self, labels):
        if self.kind == "auto":
            self.kind = _kind_of(labels)
            if self.kind is None:
                self.skip("the labels are per token")
                return None
        if self.kind == "classes":
            if labels.ndim > 1 and labels.shape[-1] > 1:
                self.skip("the labels are per token, not per example")
                return None
            ids = labels.reshape(-1)
            if not np.issubdtype(ids.dtype, np.integer):
                if not np.all(np.mod(ids, 1) == 0):
                    self.skip("the labels are not class ids")
                    return None
                ids = ids.astype("int64")
            ids = ids[ids >= 0]  # unlabelled examples (-1) carry no class
            if not len(ids):
                return None
            return np.eye(int(ids.max()) + 1)[ids]
        return labels.reshape(len(labels), -1).astype("float64")  # values, vectors

    def skip(self, reason):
        """Stops counting; the summary says `not measured: <reason>`."""
        self.kind, self.reason = None, f"not measured: {reason}"

    # ------------------------------------------------------------- reading
    def summary(self):
        """A JSON-able dict: `batches`, `examples`, `ratio` (dispersion over
        its random expectation, 1 for random batches; None when it cannot
        be measured), `threshold` (what `far_from_random` compares with),
        `far_from_random`; for class ids `class_shares` (of the epoch),
        `dominated_batches` and `expected_dominated_batches` (shares of the
        batches); `reason` when the mix is not measured."""
        if self.kind is None:
            return {"measured": False, "reason": self.reason}
        out = {"measured": True, "kind": self.kind, "batches": self.batches,
               "examples": self.examples, "ratio": None, "threshold": None,
               "far_from_random": False}
        if self.batches < MIN_BATCHES:
            out["reason"] = (f"{self.batches} labelled batch(es): too few to tell"
                             if self.batches else "no labelled batches")
            return out
        average = self.sum_means / self.batches
        dispersion = self.sum_mean_sq / self.batches - float(average @ average)
        center = self.sum_vectors / self.examples
        variance = self.sum_vector_sq / self.examples - float(center @ center)
        # E|m_b - mean|^2 = s^2 / n * (N - n) / (N - 1), n the batches' size
        mean_inverse = self.sum_inverse_size / self.batches
        finite = (self.examples - 1.0 / mean_inverse) / max(self.examples - 1, 1)
        expected = variance * mean_inverse * finite
        components = max(len(center) - 1, 1) if self.kind == "classes" else len(center)
        threshold = max(1.5, 1 + 5 * math.sqrt(2 / (components * (self.batches - 1))))
        ratio = dispersion / expected if expected > 0 else None
        out.update(ratio=ratio, threshold=threshold,
                   far_from_random=ratio is not None and ratio > threshold)
        if self.kind == "classes":
            out["class_shares"] = [float(v) for v in center]
            out["dominated_batches"] = self.dominated / self.batches
            out["expected_dominated_batches"] = sum(
                count * dominated_probability(size, center)
                for size, count in self.sizes.items()) / self.batches
        return out

    def far_from_random(self):
        return bool(self.summary().get("far_from_random"))

    # ------------------------------------------------------------- tf.data
    def tap(self, dataset, batches=None):
        """`dataset` with every batch's labels counted as it is read, for
        the first `batches` batches (default: its cardinality, one epoch);
        the batches themselves pass through unchanged.

        Args:
            dataset: a batched `(features, labels[, weights])` dataset.
            batches: how many batches to count (None: one epoch).
        """
        import tensorflow as tf  # the counting itself needs none

        if self.kind is None or not (isinstance(dataset.element_spec, tuple)
                                     and len(dataset.element_spec) >= 2):
            return dataset  # nothing to count, or no labels
        limit = int(dataset.cardinality()) if batches is None else int(batches)
        if limit < 0:  # unknown or infinite: count every batch
            limit = None

        def count(labels):
            if limit is None or self.batches < limit:
                self.add(labels.numpy())
            return np.int64(0)

        def counted(x, y, *rest):
            done = tf.py_function(count, [y], tf.int64)
            with tf.control_dependencies([done]):
                y = tf.identity(y)
            return (x, y, *rest)

        return dataset.map(counted)

    def describe(self):
        """One line for the log and the report (`describe_mix`)."""
        return describe_mix(self.summary())


def describe_mix(summary):
    """One line on a `BatchMix.summary()`."""
    if not summary["measured"]:
        return f"label mix {summary['reason']}"
    if summary["ratio"] is None:
        return f"label mix of {summary['batches']} batch(es): {summary.get('reason')}"
    text = (f"label mix of the first epoch's {summary['batches']} batches: dispersion "
            f"{summary['ratio']:.2f}x that of random batches (1.0 = random; "
            f"warning above {summary['threshold']:.2f})")
    if "dominated_batches" in summary:
        text += (f"; {summary['dominated_batches']:.1%} of the batches >= "
                 f"{DOMINATED_SHARE:.0%} one class "
                 f"({summary['expected_dominated_batches']:.1%} expected)")
    return text


def _kind_of(labels):
    """What `BatchMix("auto")` reads a batch of labels as (None: skipped)."""
    rows = labels.ndim > 1 and labels.shape[-1] > 1
    if np.issubdtype(labels.dtype, np.integer):
        return None if rows else "classes"
    return "vectors" if rows else "values"


def dominated_probability(size, shares):
    """The probability that a random batch of `size` examples (drawn with
    replacement from classes of `shares`) holds one class at
    `DOMINATED_SHARE` or more (binomial tails, one per class; disjoint
    events, since the share is over one half)."""
    need = math.ceil(DOMINATED_SHARE * size)
    total = 0.0
    for p in shares:
        total += sum(math.comb(size, k) * p ** k * (1 - p) ** (size - k)
                     for k in range(need, size + 1))
    return min(total, 1.0)


def _grown(array, width):
    return np.concatenate([array, np.zeros(width - len(array))])
