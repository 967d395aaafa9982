"""Columnar data sources: Parquet files, Hugging Face `datasets` (saved to
disk or in memory) and plain Python columns.

Each becomes a `Table` (rows as `(location, {column: value})`, only the
columns a config reads) or, for a `DatasetDict` / a dict of splits,
`{split name: Table}`. `pyarrow` and `datasets` are optional extras
(`pip install "kdplug[parquet]"`, `"kdplug[datasets]"`), imported only when
such a source is read.
"""

import dataclasses
import os
from collections.abc import Mapping
from typing import Optional

import numpy as np

from kdplug.errors import DataError


@dataclasses.dataclass
class Table:
    """One split's (or one source's) rows.

    Args:
        source: what the rows came from, for messages (a file, `folder
            [train]`, `<in memory>[train]`).
        rows: list of `(location, {column: value})`; a location is a line
            number (text files) or `"row N"` (1-based).
        class_names: the label column's `ClassLabel` names, if it is one.
    """

    source: str
    rows: list
    class_names: Optional[list] = None


def is_hf_folder(path):
    """Whether `path` is a folder written by `datasets`' `save_to_disk`."""
    return os.path.isdir(path) and any(
        os.path.isfile(os.path.join(path, name))
        for name in ("dataset_dict.json", "state.json", "dataset_info.json"))


def read_parquet(path, columns, field="data.path"):
    """The rows of a Parquet file (`columns`: `{column: config field}` it
    must have)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{path}: reading Parquet ({field}) needs pyarrow: "
                        "pip install \"kdplug[parquet]\"") from None
    try:
        schema = pq.read_schema(path)
        _check_columns(path, schema.names, columns)
        table = pq.read_table(path, columns=list(columns))
    except DataError:
        raise
    except Exception as e:  # pyarrow raises several types for a bad file
        raise DataError(f"{path}: not a readable Parquet file ({field}): {e}") from None
    return Table(path, _numbered(table.to_pydict(), list(columns)))


def load_hf_folder(path, field="data.path"):
    """`datasets.load_from_disk(path)`: a `Dataset` or a `DatasetDict`."""
    datasets = import_datasets(f"{path}: reading a saved Hugging Face dataset ({field})")
    try:
        return datasets.load_from_disk(path)
    except Exception as e:  # datasets raises several types for a bad folder
        raise DataError(f"{path}: not a dataset saved with save_to_disk ({field}): "
                        f"{type(e).__name__}: {e}") from None


def import_datasets(what):
    try:
        import datasets
    except ImportError:
        raise DataError(f"{what} needs the datasets package: "
                        "pip install \"kdplug[datasets]\"") from None
    return datasets


def tables(data, columns, source, label_column=None, split_column=None):
    """A `Table`, or `{split: Table}`, of in-memory or loaded data.

    Args:
        data: a `datasets.Dataset` or `DatasetDict`, a dict of columns
            (`{"text": [...], "label": [...]}`), a pandas `DataFrame`, a
            list of row dicts, or a dict of splits whose values are any of
            these.
        columns: `{column: config field}` every table must have.
        source: names the data in messages (a folder, `<in memory>`).
        label_column: its `ClassLabel` names (if it is one) are kept.
        split_column: also read from a single table (not from a dict of
            splits).
    """
    if _is_split_dict(data):
        return {str(name): _table(part, columns, f"{source} [{name}]", label_column)
                for name, part in data.items()}
    if split_column:
        columns = {**columns, split_column: "data.split_column"}
    return _table(data, columns, source, label_column)


def _is_split_dict(data):
    if type(data).__name__ == "DatasetDict":
        return True
    return isinstance(data, Mapping) and bool(data) and all(
        isinstance(v, Mapping) or _is_dataset(v) or _is_row_list(v) or _is_frame(v)
        for v in data.values())


def _is_frame(data):
    return type(data).__name__ == "DataFrame" and hasattr(data, "to_dict")


def _is_dataset(data):
    return type(data).__name__ in ("Dataset", "IterableDataset") and hasattr(
        data, "column_names")


def _is_row_list(data):
    return isinstance(data, (list, tuple)) and bool(data) and isinstance(data[0], Mapping)


def _table(data, columns, source, label_column):
    if _is_frame(data):  # pandas
        check_unique_columns(source, [str(c) for c in data.columns])
        data = data.to_dict("list")
    if _is_dataset(data):
        if not hasattr(data, "select_columns") or type(data).__name__ != "Dataset":
            raise DataError(f"{source}: an IterableDataset cannot be read; pass a "
                            "Dataset (e.g. load_dataset(..., streaming=False))")
        _check_columns(source, data.column_names, columns)
        feature = data.features.get(label_column)
        names = list(feature.names) if type(feature).__name__ == "ClassLabel" else None
        picked = data.select_columns(list(columns))
        return Table(source, _numbered(picked.to_dict(), list(columns)), names)
    if _is_row_list(data):
        rows = [(f"row {i}", dict(row)) for i, row in enumerate(data, start=1)]
        return Table(source, rows)
    if isinstance(data, (list, tuple)) and not data:
        raise DataError(f"{source}: no rows (an empty {type(data).__name__})")
    if isinstance(data, Mapping) and data and all(
            isinstance(v, (list, tuple)) and not v for v in data.values()):
        raise DataError(f"{source}: no rows: {', '.join(map(str, data))} are all "
                        "empty (as splits or as columns)")
    if isinstance(data, Mapping):
        _check_columns(source, list(data), columns)
        lengths = {c: len(data[c]) for c in columns}
        if len(set(lengths.values())) > 1:
            raise DataError(f"{source}: columns of different lengths {lengths}")
        return Table(source, _numbered({c: list(data[c]) for c in columns},
                                       list(columns)))
    raise DataError(
        f"{source}: cannot read a {type(data).__name__}; pass a datasets "
        "Dataset or DatasetDict, a dict of columns, a list of row dicts, or a "
        "dict of splits of these")


def _check_columns(source, names, columns):
    check_unique_columns(source, names)
    for column, field in columns.items():
        if column not in names:
            raise DataError(f"{source}: no column {column!r} ({field}); columns "
                            f"are {sorted(names)}")


def check_unique_columns(source, names):
    """Raises `DataError` naming `source` and the column when a (named)
    column appears twice: reading one of them silently would be a guess.

    >>> check_unique_columns("data.tsv:1", ["text", "label", "text"])
    Traceback (most recent call last):
    ...
    kdplug.errors.DataError: data.tsv:1: the column 'text' appears twice (columns 1 and 3); rename or remove one
    """
    seen = {}
    for position, name in enumerate(names, start=1):
        if name == "":
            continue  # unnamed columns are never read
        if name in seen:
            raise DataError(f"{source}: the column {name!r} appears twice (columns "
                            f"{seen[name]} and {position}); rename or remove one")
        seen[name] = position


def _numbered(by_column, columns):
    """`[("row 1", {column: value}), ...]` from `{column: [values]}`."""
    values = [_plain(by_column[c]) for c in columns]
    return [(f"row {i}", dict(zip(columns, row)))
            for i, row in enumerate(zip(*values), start=1)]


def _plain(values):
    """numpy scalars and bytes as Python values."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    return [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v
            for v in values]
