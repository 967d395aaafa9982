"""Where a config's splits come from, as `tables.Table`s of rows: one
source holding every split (rows sorted by `data.split_column`, or a saved
`DatasetDict`'s splits), one source per split (`data.train`, `dev`,
`test`), in-memory data or TFDS; and what their content hashes to.
"""

import os
import warnings

import numpy as np

from kdplug.data import tables
from kdplug.data.row_files import at_row
from kdplug.data.row_files import read_rows
from kdplug.data.row_files import source_format
from kdplug.errors import DataError
from kdplug.storage import fingerprint_path

TFDS_PREFIX = "tfds:"
# `DataConfig.path` of in-memory data (`examples_from_dataset`).
IN_MEMORY = "<in memory>"


def source_fingerprints(cfg, resolve_path=os.path.abspath):
    """What the data's content hashes to, for cache keys and run settings:
    the fingerprint of `path` (a file, or every file of a saved folder;
    `tfds:<name>` stands for itself), or `{key: fingerprint}` of the
    per-split sources."""
    if cfg.path is not None:
        if cfg.path.startswith(TFDS_PREFIX):
            return cfg.path
        return fingerprint_path(resolve_path(cfg.path))
    return {key: fingerprint_path(resolve_path(value))
            for key, value in cfg.sources().items()}


def describe_sources(cfg):
    """`"data.tsv"` or `"train: a.tsv, dev: b.tsv"`, for reports."""
    return ", ".join(value if key == "path" else f"{key}: {value}"
                     for key, value in cfg.sources().items())


def _columns(cfg, split_column=True):
    """`{column: config field}` of the columns a table must have."""
    columns = {cfg.text_column: "data.text_column"}
    if cfg.text_pair_column:
        columns[cfg.text_pair_column] = "data.text_pair_column"
    columns[cfg.label_column] = "data.label_column"
    if split_column and cfg.split_column:
        columns[cfg.split_column] = "data.split_column"
    return columns


def _wanted(cfg):
    return {"train": cfg.train_split, "validation": cfg.validation_split,
            "test": cfg.test_split}


def split_parts(cfg, path, loaded=None):
    """`{split: Table or None}` of one source holding every split (`train`,
    `validation`, `test`, as `cfg`'s `*_split` name them; None where a split
    is null): a saved `DatasetDict`'s splits by name, or any other source's
    rows by the value of `cfg.split_column` in each row. `loaded`: the
    source as `load_source` gave it (read here if None). A split named but
    absent, or a row without the split column, is a `DataError` naming the
    field.

    Examples:

    ```python
    loaded = load_source(path, cfg, "data.path", split_column=True)
    parts = split_parts(cfg, path, loaded)  # parts["train"].rows
    ```
    """
    if loaded is None:
        loaded = load_source(path, cfg, "data.path")
    if isinstance(loaded, dict):
        return _dict_parts(cfg, path, loaded)
    return _split_by_column(cfg, path, loaded)


def _dict_parts(cfg, source, by_split):
    parts = {}
    for name, split in _wanted(cfg).items():
        if split is None:
            parts[name] = None
            continue
        if split not in by_split:
            hint = (" (or set data.test_split: null to run without a test split)"
                    if name == "test" else "")
            raise DataError(
                f"{source}: no split {split!r} (data.{name}_split); its splits "
                f"are {sorted(by_split)}{hint}")
        parts[name] = by_split[split]
    return parts


def _split_by_column(cfg, path, table):
    if cfg.split_column is None:
        raise DataError(
            f"{path}: data.split_column is null; put the split name in a "
            "column, or name one file per split (data.train, data.dev, data.test)")
    wanted = _wanted(cfg)
    buckets = {name: [] for name in wanted}
    unused = {}  # a split value no split uses -> [rows, first row's place]
    for where, row in table.rows:
        if cfg.split_column not in row:
            raise DataError(
                f"{at_row(path, where)}: no column {cfg.split_column!r} "
                f"(data.split_column); columns are {sorted(row)}"
            )
        value = row[cfg.split_column]
        names = [name for name, split in wanted.items() if split == value]
        for name in names:
            buckets[name].append((where, row))
        if not names:
            unused.setdefault(value, [0, where])[0] += 1
    others = "; ".join(
        f"{count} with {cfg.split_column}={value!r} (first: {_place(first)})"
        for value, (count, first) in unused.items())
    parts = {}
    for name, split in wanted.items():
        if split is None:
            parts[name] = None
            continue
        if not buckets[name]:
            hint = (" (or set data.test_split: null to run without a test split)"
                    if name == "test" else "")
            raise DataError(
                f"{path}: no rows with {cfg.split_column}={split!r} "
                f"(data.{name}_split){hint}"
                + (f"; rows no split uses: {others}" if others else "")
            )
        parts[name] = tables.Table(path, buckets[name], table.class_names)
    if others:
        warnings.warn(
            f"{path}: rows in none of the splits used, not read: {others} (the "
            "splits used: " + ", ".join(
                f"data.{name}_split {split!r}" for name, split in wanted.items()
                if split is not None) + ")")
    return parts


def per_split_parts(cfg, resolve_path, columns=None):
    """`{split: Table or None}` of one source per split (`cfg.train`,
    `cfg.dev`, `cfg.test`; None where the config names none), each file
    resolved by `resolve_path` and read by `load_source` (`columns`: as it
    takes them). A `DatasetDict` there is a `DataError` naming the field
    (it belongs in `data.path`).

    Examples:

    ```python
    parts = per_split_parts(config.data, config.resolve_path)
    parts["validation"].rows  # [(line, {column: value}), ...]
    ```
    """
    parts = {}
    for key, name in cfg.SPLIT_FILES.items():
        value = getattr(cfg, key)
        if value is None:
            parts[name] = None
            continue
        path = resolve_path(value)
        loaded = load_source(path, cfg, f"data.{key}", split_column=False,
                             columns=columns)
        if isinstance(loaded, dict):
            raise DataError(
                f"{path}: a DatasetDict with splits {sorted(loaded)}; data.{key} "
                "takes one split (a saved Dataset); name a DatasetDict in data.path")
        parts[name] = loaded
    return parts


def memory_parts(cfg, data):
    loaded = tables.tables(data, _columns(cfg, split_column=False), IN_MEMORY,
                           cfg.label_column, cfg.split_column)
    return split_parts(cfg, IN_MEMORY, loaded)


def load_source(path, cfg, field="data.path", split_column=True, columns=None):
    """One source's rows (a `tables.Table`), or `{split: Table}` for a
    saved `DatasetDict`.

    `columns` (`{column: config field}`) are the columns a Parquet file or a
    saved dataset must have, checked there; by default `cfg`'s text, pair
    and label columns (a method reading other columns, e.g. a source and a
    target, names its own). With `split_column`, `data.split_column` too."""
    if not os.path.exists(path):
        raise DataError(f"{path}: data file not found ({field})")
    columns = dict(_columns(cfg, split_column=False) if columns is None else columns)
    fmt = source_format(path, cfg.format, field)
    if fmt == "hf_dataset":
        return tables.tables(tables.load_hf_folder(path, field), columns, path,
                             cfg.label_column, cfg.split_column if split_column else None)
    if os.path.isdir(path):
        raise DataError(f"{path}: a folder ({field}); data.format {fmt} reads a file")
    if fmt == "parquet":
        if split_column and cfg.split_column:
            columns[cfg.split_column] = "data.split_column"
        return tables.read_parquet(path, columns, field)
    return tables.Table(path, read_rows(path, fmt, cfg.quoting, field))


def tfds_parts(cfg):
    """The splits of a TensorFlow Datasets dataset, e.g. `tfds:glue/sst2`,
    with the class names of a `ClassLabel` label column (`glue/sst2`:
    negative, positive), as a `datasets` `ClassLabel` column gives them.

    Needs the dataset prepared locally (or network access to prepare it);
    tests use `tfds.testing.mock_data`.
    """
    import tensorflow_datasets as tfds

    name = cfg.path[len(TFDS_PREFIX):]
    parts = {}
    for key, split in _wanted(cfg).items():
        if split is None:
            parts[key] = None
            continue
        try:
            ds, info = tfds.load(name, split=split, with_info=True)
        except Exception as e:  # tfds raises many types; report them as one
            raise DataError(f"{cfg.path}: cannot load split {split!r}: {e}") from None
        rows = [
            (i, {k: _decode(v) for k, v in ex.items()})
            for i, ex in enumerate(tfds.as_numpy(ds))
        ]
        features = info.features
        label = features[cfg.label_column] if cfg.label_column in features.keys() else None
        names = list(label.names) if isinstance(label, tfds.features.ClassLabel) else None
        parts[key] = tables.Table(cfg.path, rows, names)
    return parts


def _decode(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _place(where):
    """`line 12` for a line number, `row 3` for a table row."""
    return f"line {where}" if isinstance(where, int) else str(where)
