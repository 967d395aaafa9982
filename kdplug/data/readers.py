"""Reading labelled text: TSV / CSV / JSONL / Parquet files, Hugging Face
`datasets` (saved to disk or in memory) and TFDS.

A `DataConfig` names one source holding every split (`path`, rows sorted
by `split_column`, or a `DatasetDict`'s splits) or one source per split
(`train`, `dev`, `test`). Labels are class ids or class names
(`kdplug.data.label_map`); `read_splits` returns the splits with their
`LabelMap`.

The pieces, by concern: `split_sources` (where the splits' rows come
from), `row_files` (a file's format and rows), `label_kinds` (rows to
`Examples` with one of four label kinds); `read_splits` joins them. Their
public names stay importable from here (and from `kdplug.data`).
"""

import os

import numpy as np

from kdplug.data.label_kinds import LABEL_KINDS
from kdplug.data.label_kinds import label_map_for
from kdplug.data.label_kinds import rows_to_examples
from kdplug.data.label_kinds import text_field
from kdplug.data.row_files import EXTENSIONS
from kdplug.data.row_files import read_rows
from kdplug.data.row_files import source_format
from kdplug.data.split_sources import IN_MEMORY
from kdplug.data.split_sources import TFDS_PREFIX
from kdplug.data.split_sources import describe_sources
from kdplug.data.split_sources import load_source
from kdplug.data.split_sources import memory_parts
from kdplug.data.split_sources import per_split_parts
from kdplug.data.split_sources import source_fingerprints
from kdplug.data.split_sources import split_parts
from kdplug.data.split_sources import tfds_parts
from kdplug.errors import DataError

__all__ = [
    "EXTENSIONS", "IN_MEMORY", "LABEL_KINDS", "Splits", "TFDS_PREFIX",
    "describe_sources", "examples_from_dataset", "load_source", "per_split_parts",
    "read_rows", "read_splits", "rows_to_examples", "source_fingerprints",
    "source_format", "split_parts", "text_field",
]


class Splits(dict):
    """`{"train": Examples, "validation": Examples | None, "test": Examples |
    None}` with the `label_map` (`kdplug.data.label_map.LabelMap`) that
    turned the label column into class ids."""

    def __init__(self, splits, label_map=None):
        super().__init__(splits)
        self.label_map = label_map


def read_splits(cfg, resolve_path=os.path.abspath, label_kind="class", seed=0,
                data=None):
    """Reads the train / validation / test splits a `DataConfig` names.

    Args:
        cfg: a `DataConfig`.
        resolve_path: maps the config's paths to files (e.g. relative to the
            config).
        label_kind: `"class"` (class ids in `0..num_classes-1`, int32
            labels, from ids or names, see `LabelMap.resolve`),
            `"float"` (finite numbers, e.g. a regression target; float32
            labels), `"multi"` (a list of class ids or names per row, or a
            string split at `data.label_separator` in TSV / CSV; float32
            multi-hot labels `(n, num_classes)`) or `"tags"` (token
            classification: the text column holds words, a list or one
            string split at spaces, and the label column one tag per word,
            the same way; texts are the words joined by single spaces and
            labels an object array of int32 tag ids per word, aligned to
            word pieces later by `kdplug.data.token_alignment`).
        seed: draws the `max_train_examples` subsample (stratified by
            label, `Examples.sample`), never the first rows.
        data: in-memory data read instead of the config's sources (see
            `examples_from_dataset`).

    Returns a `Splits` dict `{"train": Examples, "validation": Examples |
    None, "test": Examples | None}`; `.label_map` says how labels became ids.

    Examples:

    ```python
    splits = read_splits(DataConfig(train="train.csv", dev="dev.csv"))
    splits["test"] is None, splits.label_map.names
    ```
    """
    if label_kind not in LABEL_KINDS:
        raise ValueError(f"label_kind must be one of {LABEL_KINDS}, got {label_kind!r}")
    if data is not None:
        parts, source = memory_parts(cfg, data), IN_MEMORY
    elif cfg.path is None:
        parts = per_split_parts(cfg, resolve_path)
        source = parts["train"].source
    elif cfg.path.startswith(TFDS_PREFIX):
        parts, source = tfds_parts(cfg), cfg.path
    else:
        source = resolve_path(cfg.path)
        parts = split_parts(cfg, source)
    label_map = label_map_for(cfg, parts["train"], label_kind, source)
    splits = Splits({name: None if part is None else
                     rows_to_examples(part.rows, cfg, part.source, label_kind, label_map)
                     for name, part in parts.items()}, label_map)
    return _finish(splits, cfg, source, label_kind, seed)


def examples_from_dataset(data, config=None, label_kind="class", seed=0, **options):
    """Splits of in-memory data, read as `read_splits` reads files.

    Args:
        data: a `datasets.DatasetDict` (or a dict of splits), whose
            `train_split` / `validation_split` / `test_split` are read; or
            one `datasets.Dataset`, dict of columns (`{"text": [...],
            "label": [...], "split": [...]}`) or list of row dicts, whose
            `split_column` names each row's split.
        config: a `DataConfig` (its sources are ignored); default one
            built from `options`.
        label_kind, seed: as for `read_splits`.
        **options: `DataConfig` fields (`text_column`, `label_names`,
            `validation_split`, ...) when `config` is None.

    Returns the `Splits` (see `read_splits`).

    Examples:

    >>> splits = examples_from_dataset(
    ...     {"train": {"text": ["good", "bad"], "label": ["pos", "neg"]},
    ...      "dev": {"text": ["fine"], "label": ["pos"]}}, test_split=None)
    >>> splits["train"].labels.tolist(), splits.label_map.names, splits["test"]
    ([1, 0], ['neg', 'pos'], None)
    """
    if config is None:
        from kdplug.config.sections import DataConfig

        config = DataConfig(path=IN_MEMORY, **options)
    elif options:
        raise TypeError("pass either a config or DataConfig options, not both")
    return read_splits(config, label_kind=label_kind, seed=seed, data=data)


def _finish(splits, cfg, source, label_kind, seed):
    """Subsamples the train split and checks that it can teach anything."""
    if cfg.max_train_examples:
        splits["train"] = splits["train"].sample(cfg.max_train_examples, seed)
    labels = np.asarray(splits["train"].labels)
    if label_kind == "class" and len(np.unique(labels)) < 2:
        split = (f"{cfg.train_split!r}, " if cfg.path is not None else "")
        label = int(labels[0])
        if splits.label_map is not None and splits.label_map.named:
            label = f"{label} ({splits.label_map.names[label]})"
        raise DataError(
            f"{source}: every example of the train split "
            f"({split}{len(labels)} rows) has label "
            f"{label}; a classifier needs at least two classes "
            f"(check data.label_column and data.split_column)")
    return splits
