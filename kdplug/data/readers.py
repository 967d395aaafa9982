"""Reading labelled text from TSV / CSV / JSONL files and TFDS."""

import csv
import io
import json
import math
import os
import warnings

import numpy as np

from kdplug.data.examples import Examples
from kdplug.errors import DataError

TFDS_PREFIX = "tfds:"


LABEL_KINDS = ("class", "float")


def read_splits(cfg, resolve_path=os.path.abspath, label_kind="class", seed=0):
    """Reads the train / validation / test splits a `DataConfig` names.

    Args:
        cfg: a `DataConfig`.
        resolve_path: maps `cfg.path` to a file (e.g. relative to the config).
        label_kind: `"class"` (integer class ids in `0..num_classes-1`,
            int32 labels) or `"float"` (finite numbers, e.g. a regression
            target; float32 labels).
        seed: draws the `max_train_examples` subsample (stratified by
            label, `Examples.sample`), never the first rows.

    Returns a dict `{"train": Examples, "validation": Examples | None,
    "test": Examples}`.
    """
    if label_kind not in LABEL_KINDS:
        raise ValueError(f"label_kind must be one of {LABEL_KINDS}, got {label_kind!r}")
    if cfg.path.startswith(TFDS_PREFIX):
        return _read_tfds(cfg, label_kind, seed)
    path = resolve_path(cfg.path)
    rows = read_rows(path, cfg.format)
    wanted = {
        "train": cfg.train_split,
        "validation": cfg.validation_split,
        "test": cfg.test_split,
    }
    if cfg.split_column is None:
        raise DataError(
            f"{path}: data.split_column is null; put the split name in a "
            "column (or use separate files per split)"
        )
    buckets = {name: [] for name in wanted}
    for line_no, row in rows:
        if cfg.split_column not in row:
            raise DataError(
                f"{path}:{line_no}: no column {cfg.split_column!r} "
                f"(data.split_column); columns are {sorted(row)}"
            )
        for name, split in wanted.items():
            if split is not None and row[cfg.split_column] == split:
                buckets[name].append((line_no, row))
    splits = {}
    for name, split in wanted.items():
        if split is None:
            splits[name] = None
            continue
        if not buckets[name]:
            raise DataError(
                f"{path}: no rows with {cfg.split_column}={split!r} "
                f"(data.{name if name != 'validation' else 'validation'}_split)"
            )
        splits[name] = _to_examples(buckets[name], cfg, path, label_kind)
    return _finish(splits, cfg, path, label_kind, seed)


def _finish(splits, cfg, source, label_kind, seed):
    """Subsamples the train split and checks that it can teach anything."""
    if cfg.max_train_examples:
        splits["train"] = splits["train"].sample(cfg.max_train_examples, seed)
    labels = np.asarray(splits["train"].labels)
    if label_kind == "class" and len(np.unique(labels)) < 2:
        raise DataError(
            f"{source}: every example of the train split "
            f"({cfg.train_split!r}, {len(labels)} rows) has label "
            f"{int(labels[0])}; a classifier needs at least two classes "
            f"(check data.label_column and data.split_column)")
    return splits


def read_rows(path, fmt="auto"):
    """Yields `(line_number, {column: value})` for every data row."""
    if not os.path.isfile(path):
        raise DataError(f"{path}: data file not found (data.path)")
    if fmt == "auto":
        ext = os.path.splitext(path)[1].lower()
        fmt = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}.get(ext)
        if fmt is None:
            raise DataError(
                f"{path}: cannot tell the format from the extension; set "
                "data.format to tsv, csv or jsonl"
            )
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    decoded = []
    for i, line in enumerate(lines, start=1):
        try:
            decoded.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:
            raise DataError(f"{path}:{i}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
    if fmt == "jsonl":
        rows = []
        for i, line in enumerate(decoded, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{i}: invalid JSON: {e.msg}") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{i}: each line must be a JSON object")
            rows.append((i, row))
        return rows
    if fmt == "tsv":
        header, *body = decoded
        columns = header.split("\t")
        rows = []
        for i, line in enumerate(body, start=2):
            if not line:
                continue
            values = line.split("\t")
            if len(values) != len(columns):
                raise DataError(
                    f"{path}:{i}: {len(values)} fields, header has {len(columns)}"
                )
            rows.append((i, dict(zip(columns, values))))
        return rows
    reader = csv.DictReader(io.StringIO("\n".join(decoded)))
    return [(i + 2, row) for i, row in enumerate(reader) if any(row.values())]


def _to_examples(rows, cfg, path, label_kind="class"):
    texts, pairs, labels = [], [], []
    skipped = 0
    for line_no, row in rows:
        try:
            text = _text(row, cfg.text_column, path, line_no)
            pair = (
                _text(row, cfg.text_pair_column, path, line_no)
                if cfg.text_pair_column else None
            )
            label = _LABEL_READERS[label_kind](row, cfg, path, line_no)
        except DataError:
            if cfg.bad_rows == "skip":
                skipped += 1
                continue
            raise
        texts.append(text)
        pairs.append(pair)
        labels.append(label)
    if skipped:
        warnings.warn(f"{path}: skipped {skipped} bad row(s) (data.bad_rows: skip)")
    if not texts:
        raise DataError(f"{path}: no usable rows")
    return Examples(
        texts,
        np.asarray(labels, dtype="int32" if label_kind == "class" else "float32"),
        pairs if cfg.text_pair_column else None,
        source=path,
    )


def _text(row, column, path, line_no):
    if column not in row:
        raise DataError(
            f"{path}:{line_no}: no column {column!r}; columns are {sorted(row)}"
        )
    value = row[column]
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{path}:{line_no}: empty text in column {column!r}")
    return value


def _label_value(row, cfg, path, line_no):
    if cfg.label_column not in row:
        raise DataError(
            f"{path}:{line_no}: no column {cfg.label_column!r} "
            f"(data.label_column); columns are {sorted(row)}"
        )
    return row[cfg.label_column]


def _label(row, cfg, path, line_no):
    """An integer class id in `0..num_classes-1` (`label_kind: class`)."""
    value = _label_value(row, cfg, path, line_no)
    try:
        label = int(value)
        if str(value).strip() not in (str(label), f"{label}.0"):
            raise ValueError
    except (TypeError, ValueError):
        raise DataError(
            f"{path}:{line_no}: label {value!r} in column "
            f"{cfg.label_column!r} is not an integer class id"
        ) from None
    if not 0 <= label < cfg.num_classes:
        raise DataError(
            f"{path}:{line_no}: label {label} is outside the declared classes "
            f"0..{cfg.num_classes - 1} (data.num_classes)"
        )
    return label


def _number(row, cfg, path, line_no):
    """A finite number (`label_kind: float`)."""
    raw = _label_value(row, cfg, path, line_no)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataError(
            f"{path}:{line_no}: target {raw!r} in column {cfg.label_column!r} "
            "is not a finite number"
        )
    return value


_LABEL_READERS = {"class": _label, "float": _number}


def _read_tfds(cfg, label_kind="class", seed=0):
    """Reads a TensorFlow Datasets dataset, e.g. `tfds:glue/sst2`.

    Needs the dataset prepared locally (or network access to prepare it);
    tests use `tfds.testing.mock_data`.
    """
    import tensorflow_datasets as tfds

    name = cfg.path[len(TFDS_PREFIX):]
    wanted = {
        "train": cfg.train_split,
        "validation": cfg.validation_split,
        "test": cfg.test_split,
    }
    splits = {}
    for key, split in wanted.items():
        if split is None:
            splits[key] = None
            continue
        try:
            ds = tfds.load(name, split=split)
        except Exception as e:  # tfds raises many types; report them as one
            raise DataError(f"{cfg.path}: cannot load split {split!r}: {e}") from None
        rows = [
            (i, {k: _decode(v) for k, v in ex.items()})
            for i, ex in enumerate(tfds.as_numpy(ds))
        ]
        splits[key] = _to_examples(rows, cfg, cfg.path, label_kind)
    return _finish(splits, cfg, cfg.path, label_kind, seed)


def _decode(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value
