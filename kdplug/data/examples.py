import dataclasses
import hashlib
from typing import Optional

import numpy as np


@dataclasses.dataclass
class Examples:
    """A split's examples, in memory.

    Args:
        texts: list of str.
        labels: int array; `-1` marks an example without a gold label
            (e.g. an augmented one).
        pairs: optional list of second texts, for sentence-pair tasks.
        source: where the examples came from, for messages.
    """

    texts: list
    labels: np.ndarray
    pairs: Optional[list] = None
    source: str = ""

    def __len__(self):
        return len(self.texts)

    def take(self, n):
        return Examples(
            self.texts[:n],
            self.labels[:n],
            None if self.pairs is None else self.pairs[:n],
            self.source,
        )

    def select(self, indices):
        """The examples at `indices`, in that order."""
        indices = [int(i) for i in indices]
        return Examples(
            [self.texts[i] for i in indices],
            np.asarray(self.labels)[indices],
            None if self.pairs is None else [self.pairs[i] for i in indices],
            self.source,
        )

    def sample(self, n, seed=0):
        """`n` examples drawn with `seed`, stratified by label when the
        labels are class ids; kept in their original order.

        Each class gets its share of `n` (largest remainders first, so the
        shares add up to `n`), drawn without replacement. Float labels
        (regression targets) are drawn uniformly.

        Examples:

        >>> ex = Examples(list("abcdef"), np.array([0, 0, 0, 0, 1, 1]))
        >>> sorted(ex.sample(3, seed=0).labels.tolist())
        [0, 0, 1]
        """
        if n >= len(self):
            return self
        rng = np.random.default_rng(seed)
        labels = np.asarray(self.labels)
        if not np.issubdtype(labels.dtype, np.integer):
            return self.select(np.sort(rng.choice(len(self), n, replace=False)))
        classes, counts = np.unique(labels, return_counts=True)
        shares = stratified_shares(counts, n)
        picked = [
            rng.choice(np.flatnonzero(labels == c), k, replace=False)
            for c, k in zip(classes, shares)
        ]
        return self.select(np.sort(np.concatenate(picked)))

    def concat(self, other):
        if (self.pairs is None) != (other.pairs is None):
            raise ValueError("cannot mix single-text and pair examples")
        return Examples(
            self.texts + other.texts,
            np.concatenate([self.labels, other.labels]),
            None if self.pairs is None else self.pairs + other.pairs,
            self.source,
        )


def stratified_shares(counts, n):
    """How many of `n` draws each class gets, in proportion to its `counts`:
    the floors of the exact shares, then one more for the largest
    remainders (ties: the earlier class) until they add up to `n`.

    >>> stratified_shares(np.array([4, 2]), 3).tolist()
    [2, 1]
    """
    counts = np.asarray(counts)
    exact = counts * n / counts.sum()
    shares = np.floor(exact).astype(int)
    order = np.argsort(-(exact - shares), kind="stable")
    shares[order[:n - shares.sum()]] += 1
    return shares


def examples_fingerprint(examples):
    """sha256 of the texts, second texts and labels, in order."""
    h = hashlib.sha256()
    for field in (examples.texts, examples.pairs or []):
        h.update(f"[{len(field)}]".encode())
        for text in field:
            data = str(text).encode("utf-8")
            h.update(f"{len(data)}:".encode())
            h.update(data)
    h.update(np.ascontiguousarray(np.asarray(examples.labels, "int64")).tobytes())
    return h.hexdigest()


def splits_fingerprint(splits):
    """sha256 of every split's texts, second texts and labels (values and
    dtype) and of the class names: the content of data that has no file to
    fingerprint (`Experiment(config, data=...)`).

    Args:
        splits: a `Splits` dict (`kdplug.data.read_splits`).
    """
    h = hashlib.sha256()
    label_map = getattr(splits, "label_map", None)
    h.update(repr(label_map.names if label_map is not None else None).encode())
    for name in sorted(k for k, v in splits.items() if v is not None):
        examples = splits[name]
        h.update(f"{name}:{examples_fingerprint(examples)}".encode())
        labels = np.asarray(examples.labels)
        h.update(str(labels.dtype).encode())
        h.update(repr(labels.tolist()).encode() if labels.dtype == object
                 else np.ascontiguousarray(labels).tobytes())
    return h.hexdigest()
