"""`ProbingTask`: a probing data set (texts and string labels per split)."""

import collections
import dataclasses

import numpy as np

from kdplug.errors import DataError

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass
class ProbingTask:
    """A probing set: sentences labelled with one property, in three splits.

    Probing (Conneau et al. 2018, "What you can cram into a single vector";
    Tenney et al. 2019) trains a simple classifier on a frozen model's
    sentence representation to predict a property of the sentence (its
    length, a word it contains, its tense, ...). A `ProbingTask` is the data:
    texts and their string labels for the splits `"train"`, `"dev"` (may be
    empty) and `"test"`. Read one with `read_senteval` or build one from any
    corpus with `build_probing_task`.

    Args:
        name: str. The task, e.g. `"sentence_length"`.
        texts: dict. `{"train": [str], "dev": [str], "test": [str]}`.
        labels: dict. The same keys, lists of str labels.
        description: str. How the set was built (one Markdown paragraph).
        source: str. The file it was read from, or
            `"built from N sentences of <corpus>"`.
        silver: bool. The labels come from a parser, not from annotators.

    Raises `DataError` (naming the task and its source) when a split is
    missing, a split's texts and labels differ in length, train or test is
    empty, or train has fewer than 2 distinct labels.

    Examples:

    >>> task = ProbingTask(
    ...     "tense",
    ...     texts={"train": ["She left .", "She leaves ."], "dev": [],
    ...            "test": ["He came .", "He comes .", "It ended ."]},
    ...     labels={"train": ["Past", "Pres"], "dev": [],
    ...             "test": ["Past", "Pres", "Past"]})
    >>> task.label_names()
    ['Past', 'Pres']
    >>> task.label_ids("test").tolist()
    [0, 1, 0]
    >>> round(task.majority_baseline(), 4)
    0.6667
    """

    name: str
    texts: dict
    labels: dict
    description: str = ""
    source: str = ""
    silver: bool = False

    def __post_init__(self):
        for field in ("texts", "labels"):
            value = getattr(self, field)
            if not isinstance(value, dict):
                self._fail(f"{field} must be a dict with keys "
                           f"{', '.join(SPLITS)}, got {type(value).__name__}")
            missing = [s for s in SPLITS if s not in value]
            extra = [s for s in value if s not in SPLITS]
            if missing or extra:
                self._fail(
                    f"{field} must have exactly the splits {', '.join(SPLITS)}"
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + (f"; unknown {', '.join(map(str, extra))}" if extra else ""))
        self.texts = {split: list(self.texts[split]) for split in SPLITS}
        self.labels = {split: list(self.labels[split]) for split in SPLITS}
        for split in SPLITS:
            n_texts, n_labels = len(self.texts[split]), len(self.labels[split])
            if n_texts != n_labels:
                self._fail(f"split {split!r} has {n_texts} texts but "
                           f"{n_labels} labels")
        for split in ("train", "test"):
            if not self.texts[split]:
                self._fail(f"split {split!r} is empty")
        distinct = set(self.labels["train"])
        if len(distinct) < 2:
            self._fail(
                f"the train split has {len(distinct)} distinct label"
                f"{'' if len(distinct) == 1 else 's'} "
                f"({', '.join(map(repr, sorted(distinct)))}); a probe needs at "
                "least 2")

    def _fail(self, message):
        where = f" ({self.source})" if self.source else ""
        raise DataError(f"probing task {self.name!r}{where}: {message}")

    def label_names(self):
        """Sorted distinct labels over all splits; `label_ids` index into it."""
        return sorted({label for s in SPLITS for label in self.labels[s]})

    def label_ids(self, split):
        """The labels of `split` as indices into `label_names()` (int32)."""
        index = {label: i for i, label in enumerate(self.label_names())}
        return np.asarray([index[label] for label in self.labels[split]],
                          dtype=np.int32)

    def label_distribution(self):
        """`{split: {label: count}}`, every label of `label_names()` in that
        order for every split (0 where a split lacks it)."""
        names = self.label_names()
        result = {}
        for split in SPLITS:
            counts = collections.Counter(self.labels[split])
            result[split] = {label: counts[label] for label in names}
        return result

    def majority_baseline(self):
        """Test accuracy of always predicting the most frequent train label
        (a tie goes to the first label in `label_names()` order)."""
        counts = collections.Counter(self.labels["train"])
        best = max(sorted(counts), key=lambda label: counts[label])
        test = self.labels["test"]
        return sum(label == best for label in test) / len(test)

    def sizes(self):
        """`{split: number of examples}`."""
        return {split: len(self.texts[split]) for split in SPLITS}

    def to_dict(self):
        """JSON-able metadata, without the texts: `name`, `description`,
        `source`, `silver`, `label_names`, `label_distribution`, `sizes` and
        `majority_baseline`."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "silver": bool(self.silver),
            "label_names": self.label_names(),
            "label_distribution": self.label_distribution(),
            "sizes": self.sizes(),
            "majority_baseline": self.majority_baseline(),
        }
