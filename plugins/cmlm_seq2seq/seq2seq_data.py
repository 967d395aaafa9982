import os

import numpy as np

from kdplug import storage
from kdplug.data.readers import TFDS_PREFIX
from kdplug.data.readers import load_source
from kdplug.data.readers import text_field
from kdplug.data.text_files import at_row
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
        pairs, skipped = {}, [0]
        if path is None:  # one file per split
            origin = None
            for key, name in (("train", "train"), ("dev", "validation"),
                              ("test", "test")):
                value = getattr(data, key, None)
                pairs[name] = None
                if value is not None:
                    file = resolve_path(value)
                    origin = origin or file
                    rows = _rows(file, data, f"data.{key}", columns)
                    pairs[name] = _pairs(rows, columns, file, data, skipped)
        else:
            origin = resolve_path(path)
            pairs = _pairs_by_split(origin, data, columns, skipped)
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


def _pairs_by_split(path, data, columns, skipped):
    """`{split: (sources, targets) or None}` of one source holding every
    split: a saved `DatasetDict` by its split names, any other source by
    the value of `data.split_column` in each row (`data.*_split` name
    them)."""
    wanted = {"train": data.train_split, "validation": data.validation_split,
              "test": data.test_split}
    rows = _rows(path, data, "data.path", columns, split_column=True)
    if isinstance(rows, dict):  # a saved DatasetDict
        for name, split in wanted.items():
            if split is not None and split not in rows:
                raise DataError(f"{path}: no split {split!r} (data.{name}_split); "
                                f"the dataset has {sorted(rows)}")
        return {name: None if split is None else
                _pairs(rows[split], columns, f"{path} [{split}]", data, skipped)
                for name, split in wanted.items()}
    if data.split_column is None:
        raise DataError(f"{path}: data.split_column is null; put the split "
                        "name in a column (or give one file per split)")
    buckets = {name: [] for name, split in wanted.items() if split is not None}
    for line, row in rows:
        split = row.get(data.split_column)
        if split is None:
            raise DataError(f"{path}:{line}: no column {data.split_column!r} "
                            f"(data.split_column); columns are {sorted(row)}")
        for name in buckets:
            if wanted[name] == split:
                buckets[name].append((line, row))
                break
    for name, split in wanted.items():
        if split is not None and not buckets[name]:
            raise DataError(f"{path}: no rows with {data.split_column}="
                            f"{split!r} (data.{name}_split)")
    return {name: None if split is None else _pairs(buckets[name], columns, path, data,
                                                     skipped)
            for name, split in wanted.items()}


def _rows(path, data, field, columns, split_column=False):
    """`[(location, row)]` of one source, or `{split: rows}` of a saved
    `DatasetDict`, read as every kdplug source is (`load_source`: TSV /
    CSV / JSON lines, Parquet, a folder written by `save_to_disk`), the
    source and target `columns` checked where the format allows."""
    needed = dict(zip(columns, ("method.source_column", "method.target_column")))
    loaded = load_source(path, data, field, split_column=split_column, columns=needed)
    if isinstance(loaded, dict):
        return {name: table.rows for name, table in loaded.items()}
    return loaded.rows


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
