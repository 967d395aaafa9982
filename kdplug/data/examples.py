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

    def concat(self, other):
        if (self.pairs is None) != (other.pairs is None):
            raise ValueError("cannot mix single-text and pair examples")
        return Examples(
            self.texts + other.texts,
            np.concatenate([self.labels, other.labels]),
            None if self.pairs is None else self.pairs + other.pairs,
            self.source,
        )


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
