import os

import numpy as np

from kdplug import storage
from kdplug.data import TFDS_PREFIX
from kdplug.data import at_row
from kdplug.data import load_source
from kdplug.data import per_split_parts
from kdplug.data import split_parts
from kdplug.data import text_field
from kdplug.errors import DataError

SPLITS = ("train", "validation", "test")


class Seq2SeqData:
    """The (source, target) text pairs of a sequence-to-sequence task, by
    split: `train`, `validation` (may be None) and `test`.

    Read from any file kdplug's reader takes (TSV, CSV, JSON lines: `read`)
    with a source and a target column and the split in `data.split_column`,
    or built from Python lists (`from_pairs`); `to_tsv` writes a Python
    dataset as a file a config can name (or give it to
    `CmlmSeq2SeqRunner(method, context, data=...)`).

    Args:
        splits: `{"train": (sources, targets), "validation": ... or None,
            "test": ...}`, lists of str.
        origin: where the pairs came from (a path, or `python`).

    Examples:

    ```python
    data = Seq2SeqData.read(config.data, "source", "target", config.resolve_path)
    data = Seq2SeqData.from_pairs(train=[("hello world", "Hello, world!")],
                                  test=[("good night", "Good night.")])
    sources, targets = data.splits["train"]
    ```
    """

    def __init__(self, splits, origin="python"):
        self.splits = {name: splits.get(name) for name in SPLITS}
        for name in ("train", "test"):
            if not self.splits[name] or not self.splits[name][0]:
                raise DataError(f"{origin}: the {name} split has no (source, target) pairs")
        for name, pair in self.splits.items():
            if pair is not None and len(pair[0]) != len(pair[1]):
                raise DataError(f"{origin}: {name}: {len(pair[0])} sources for "
                                f"{len(pair[1])} targets")
        self.origin = origin
        self.skipped = 0  # bad rows left out (`data.bad_rows: skip`)

    @classmethod
    def from_pairs(cls, train, test, validation=None):
        """From lists of `(source, target)` pairs."""
        def split(pairs):
            if pairs is None:
                return None
            pairs = list(pairs)
            return [str(s) for s, _ in pairs], [str(t) for _, t in pairs]

        return cls({"train": split(train), "validation": split(validation),
                    "test": split(test)})

    @classmethod
    def read(cls, data, source_column, target_column, resolve_path=os.path.abspath,
             seed=0):
        """Reads the splits a `DataConfig` names, with texts in `source_column`
        and `target_column`: one file (`path`) with the split in
        `split_column` (`*_split` name them), or one file per split where the
        config has them (`train`, `dev`, `test`); `format`, `quoting`,
        `max_train_examples` (a seeded random subsample) and `bad_rows` apply.
        Every format kdplug reads: TSV, CSV and JSON lines (`read_rows`),
        Parquet, and a Hugging Face dataset saved with `save_to_disk` (a
        `DatasetDict` at `path` gives its splits by name, `*_split`)."""
        path = getattr(data, "path", None)
        if path is not None and path.startswith(TFDS_PREFIX):
            raise DataError(f"{path}: TFDS datasets have no source/target "
                            "columns; write the pairs to a TSV / CSV / JSONL / Parquet "
                            "file or a saved Hugging Face dataset")
        columns = (source_column, target_column)
        needed = dict(zip(columns, ("method.source_column", "method.target_column")))
        if path is None:  # one file per split
            parts = per_split_parts(data, resolve_path, columns=needed)
            origin = next(part.source for part in parts.values() if part is not None)
        else:
            origin = resolve_path(path)
            parts = split_parts(data, origin, load_source(origin, data, "data.path",
                                                          columns=needed))
        skipped = [0]
        pairs = {name: None if part is None else
                 _pairs(part.rows, columns, part.source, data, skipped)
                 for name, part in parts.items()}
        train = pairs.get("train")
        if train and data.max_train_examples and data.max_train_examples < len(train[0]):
            rng = np.random.default_rng(seed)
            keep = np.sort(rng.choice(len(train[0]), data.max_train_examples,
                                      replace=False))
            pairs["train"] = tuple([texts[i] for i in keep] for texts in train)
        loaded = cls(pairs, origin=origin)
        loaded.skipped = skipped[0]
        return loaded

    def to_tsv(self, path, split_names=None):
        """Writes the pairs as a TSV (`id`, `split`, `source`, `target`) that
        `read` (and a config's `data.path`) takes: a Python dataset becomes a
        file `kdplug run` can train on (and cache by content).

        Args:
            path: the file to write.
            split_names: `{"train": ..., "validation": ..., "test": ...}`,
                the names written in the `split` column (default `train`,
                `dev`, `test`: `data:`'s defaults).
        """
        names = {"train": "train", "validation": "dev", "test": "test",
                 **(split_names or {})}
        lines = ["id\tsplit\tsource\ttarget"]
        for name, pair in self.splits.items():
            if pair is None:
                continue
            for source, target in zip(*pair):
                if any(c in text for text in (source, target) for c in "\t\n\r"):
                    raise DataError(f"a {name} pair holds a tab or a line break, "
                                    f"which a TSV cannot: {source!r} -> {target!r}")
                lines.append(f"{len(lines)}\t{names[name]}\t{source}\t{target}")
        return storage.write_text(path, "\n".join(lines) + "\n")

    def describe(self):
        """`train 8484, dev 1061, test 1060` style counts."""
        return ", ".join(f"{name} {len(pair[0])}" for name, pair in self.splits.items()
                         if pair is not None)


def _pairs(rows, columns, path, data, skipped):
    """`(sources, targets)` of `(line, row)`s; bad rows raise, or are
    counted in `skipped[0]` with `data.bad_rows: skip`."""
    sources, targets = [], []
    for line, row in rows:
        try:
            source, target = (text_field(row, column, at_row(path, line))
                              for column in columns)
        except DataError:
            if data.bad_rows == "skip":
                skipped[0] += 1
                continue
            raise
        sources.append(source)
        targets.append(target)
    return sources, targets
