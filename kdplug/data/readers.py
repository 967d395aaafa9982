"""Reading labelled text: TSV / CSV / JSONL / Parquet files, Hugging Face
`datasets` (saved to disk or in memory) and TFDS.

A `DataConfig` names one source holding every split (`path`, rows sorted
by `split_column`, or a `DatasetDict`'s splits) or one source per split
(`train`, `dev`, `test`). Labels are class ids or class names
(`kdplug.data.label_map`); `read_splits` returns the splits with their
`LabelMap`.
"""

import csv
import json
import math
import os
import warnings

import numpy as np

from kdplug.data import tables
from kdplug.data.examples import Examples
from kdplug.data.label_map import LabelMap
from kdplug.errors import DataError
from kdplug.storage import fingerprint_path

TFDS_PREFIX = "tfds:"
# `DataConfig.path` of in-memory data (`examples_from_dataset`).
IN_MEMORY = "<in memory>"

LABEL_KINDS = ("class", "float", "multi", "tags")
SPLITS = ("train", "validation", "test")
EXTENSIONS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl",
              ".parquet": "parquet", ".pq": "parquet"}
# The csv module's field limit while kdplug reads (a C long on every
# platform); its default, 131,072 characters, is a document of ~20,000 words.
FIELD_SIZE_LIMIT = 2 ** 31 - 1
QUOTING_HINT = ("a field that starts with a double quote is read as quoted "
                "(it ends at the next lone quote; quotes inside are doubled): "
                "fix the quoting, or set data.quoting: none to read quotes as text")


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
        parts, source = _memory_parts(cfg, data), IN_MEMORY
    elif cfg.path is None:
        parts = per_split_parts(cfg, resolve_path)
        source = parts["train"].source
    elif cfg.path.startswith(TFDS_PREFIX):
        parts, source = _tfds_parts(cfg), cfg.path
    else:
        source = resolve_path(cfg.path)
        parts = split_parts(cfg, source)
    label_map = None
    if label_kind == "class":
        train = parts["train"]
        label_map = LabelMap.resolve(
            cfg, [row.get(cfg.label_column) for _, row in train.rows],
            train.source, train.class_names)
    elif label_kind in ("multi", "tags"):
        train = parts["train"]
        values = _tags if label_kind == "tags" else _label_list
        label_map = LabelMap.resolve(
            cfg, [value for where, row in train.rows if cfg.label_column in row
                  for value in values(row[cfg.label_column], cfg,
                                      _at(train.source, where))],
            train.source, train.class_names)
    elif cfg.label_names is not None:
        raise DataError(f"{source}: data.label_names names classes, and these "
                        "labels are numbers (a regression target)")
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
                f"{_at(path, where)}: no column {cfg.split_column!r} "
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


def _memory_parts(cfg, data):
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


def source_format(path, fmt, field):
    """The format of a data source: `fmt` (`data.format`) unless `auto`,
    else `hf_dataset` for a folder written by `save_to_disk`, or the file
    extension's (`tsv`, `csv`, `jsonl`, `parquet`); anything else is a
    `DataError` naming `field`."""
    if fmt != "auto":
        return fmt
    if os.path.isdir(path):
        if tables.is_hf_folder(path):
            return "hf_dataset"
        raise DataError(f"{path}: a folder, and not one written by datasets' "
                        f"save_to_disk ({field}); name a data file or a saved dataset")
    fmt = EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise DataError(
            f"{path}: cannot tell the format from the extension; set "
            "data.format to tsv, csv, jsonl or parquet"
        )
    return fmt


def _place(where):
    """`line 12` for a line number, `row 3` for a table row."""
    return f"line {where}" if isinstance(where, int) else str(where)


def _at(source, where):
    """`file:12` for a line number, `file, row 3` for a table row."""
    return f"{source}:{where}" if isinstance(where, int) else f"{source}, {where}"


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


def read_rows(path, fmt="auto", quoting="csv", field="data.path"):
    """`[(line_number, {column: value})]` of every data row of a text file.

    Args:
        path: a TSV, CSV or JSONL file.
        fmt: `tsv`, `csv`, `jsonl` or `auto` (from the extension).
        quoting: TSV / CSV: `csv` (a field that starts with `"` is quoted
            and may hold delimiters and line breaks; `""` inside is one
            quote) or `none` (quotes are text; TSV rows split at every tab).
        field: the config field naming the file, for messages.

    A row's line number is the line it starts on.
    """
    if not os.path.isfile(path):
        raise DataError(f"{path}: data file not found ({field})")
    fmt = source_format(path, fmt, field)
    if fmt not in ("tsv", "csv", "jsonl"):
        raise DataError(f"{path}: read_rows reads TSV, CSV and JSONL files, not "
                        f"{fmt}; read_splits reads every format")
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    decoded = []
    for i, line in enumerate(lines, start=1):
        try:
            decoded.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:
            raise DataError(f"{path}:{i}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
    if decoded and decoded[0].startswith("\ufeff"):
        decoded[0] = decoded[0][1:]  # a byte-order mark
    if fmt == "jsonl":
        rows = []
        for i, line in enumerate(decoded, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line, object_pairs_hook=_no_duplicate_keys)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{i}: invalid JSON: {e.msg}") from None
            except DuplicateKey as e:
                raise DataError(f"{path}:{i}: key {e.args[0]!r} appears twice in "
                                "this object; which value is meant? Keep one") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{i}: each line must be a JSON object")
            rows.append((i, row))
        return rows
    if fmt == "tsv" and quoting == "none":
        records = ((i, line.split("\t")) for i, line in enumerate(decoded, start=1)
                   if line)
    else:
        records = _csv_records(path, decoded, "\t" if fmt == "tsv" else ",", quoting)
    header, rows = None, []
    for i, values in records:
        if header is None:
            header = values
            tables.check_unique_columns(f"{path}:{i}", header)
            continue
        if all(v == "" for v in values):
            continue
        if len(values) != len(header):
            raise DataError(f"{path}:{i}: {len(values)} fields, header has {len(header)}")
        rows.append((i, dict(zip(header, values))))
    return rows


def _csv_records(path, lines, delimiter, quoting):
    """`(first line, fields)` of every record, by Python's csv module, with
    no limit on a field's length (the module's default refuses fields over
    131,072 characters: a long document is a text like any other)."""
    options = ({"quoting": csv.QUOTE_NONE} if quoting == "none"
               else {"strict": True, "doublequote": True})
    reader = csv.reader((line + "\n" for line in lines), delimiter=delimiter,
                        **options)
    limit = csv.field_size_limit(FIELD_SIZE_LIMIT)
    try:
        while True:
            start = reader.line_num + 1
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                hint = f"; {QUOTING_HINT}" if quoting != "none" else ""
                raise DataError(f"{path}:{start}: {e}{hint}") from None
            if values:
                yield start, values
    finally:
        csv.field_size_limit(limit)


class DuplicateKey(ValueError):
    """A JSON object naming one key twice (`_no_duplicate_keys`)."""


def _no_duplicate_keys(pairs):
    """`json.loads`' `object_pairs_hook`: a dict, or `DuplicateKey` for a
    key given twice (json keeps the last one silently)."""
    row = {}
    for key, value in pairs:
        if key in row:
            raise DuplicateKey(key)
        row[key] = value
    return row


def rows_to_examples(rows, cfg, path, label_kind="class", label_map=None):
    """`Examples` of one file's `(where, row)` pairs read with the data
    section `cfg` (columns, label kind, the label map of class names);
    errors name `path` and the row."""
    texts, pairs, labels = [], [], []
    skipped = 0
    for where, row in rows:
        at = _at(path, where)
        try:
            if label_kind == "tags":
                text, label = _tagged_words(row, cfg, at, label_map)
                texts.append(text)
                pairs.append(None)
                labels.append(label)
                continue
            text = text_field(row, cfg.text_column, at)
            pair = (
                text_field(row, cfg.text_pair_column, at)
                if cfg.text_pair_column else None
            )
            value = _label_value(row, cfg, at)
            if label_kind == "class":
                label = label_map.class_id(value, at)
            elif label_kind == "multi":
                label = _multi_hot(_label_list(value, cfg, at), label_map, at)
            else:
                label = _number(value, cfg, at)
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
    if label_kind == "tags":  # one int32 array per example, of its words' tags
        labels = np.array(labels + [None], dtype=object)[:-1]
    else:  # multi: a list of (num_classes,) vectors stacks to (n, num_classes)
        labels = np.asarray(labels, dtype="int32" if label_kind == "class" else "float32")
    return Examples(
        texts,
        labels,
        pairs if cfg.text_pair_column else None,
        source=path,
    )


def text_field(row, column, at):
    """The non-empty text in `row[column]`; `DataError` naming `at` (e.g.
    `file:line`) and the column otherwise."""
    if column not in row:
        raise DataError(f"{at}: no column {column!r}; columns are {sorted(row)}")
    value = row[column]
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{at}: empty text in column {column!r}")
    return value


def _label_value(row, cfg, at):
    if cfg.label_column not in row:
        raise DataError(
            f"{at}: no column {cfg.label_column!r} "
            f"(data.label_column); columns are {sorted(row)}"
        )
    return row[cfg.label_column]


def _label_list(value, cfg, at):
    """A multi-label row's labels: a list as it is, a string split at
    `data.label_separator` (blank parts dropped: `""` is no label)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    if isinstance(value, str):
        return [part for part in value.split(cfg.label_separator) if part.strip()]
    if value is None:
        return []
    raise DataError(
        f"{at}: labels {value!r} in column {cfg.label_column!r} are not a list "
        f"or a string of names separated by {cfg.label_separator!r} "
        "(data.label_separator)")


def _tags(value, cfg, at, column=None):
    """A token-classification row's words or tags: a list as it is, a
    string split at whitespace."""
    column = column or cfg.label_column
    if isinstance(value, (list, tuple, np.ndarray)):
        return [str(v) for v in value]
    if isinstance(value, str):
        return value.split()
    raise DataError(f"{at}: {value!r} in column {column!r} is not a list or a "
                    "string of space-separated items")


def _tagged_words(row, cfg, at, label_map):
    """`(text, tag_ids)` of a token-classification row: its words joined by
    single spaces and one tag id per word."""
    if cfg.text_column not in row:
        raise DataError(f"{at}: no column {cfg.text_column!r}; columns are {sorted(row)}")
    words = _tags(row[cfg.text_column], cfg, at, cfg.text_column)
    tags = _tags(_label_value(row, cfg, at), cfg, at)
    if not words:
        raise DataError(f"{at}: no words in column {cfg.text_column!r}")
    spaced = [word for word in words if len(word.split()) != 1]
    if spaced:
        raise DataError(f"{at}: word {spaced[0]!r} in column {cfg.text_column!r} is "
                        "empty or holds a space; words are single tokens")
    if len(tags) != len(words):
        raise DataError(f"{at}: {len(words)} words in column {cfg.text_column!r} and "
                        f"{len(tags)} tags in column {cfg.label_column!r}; give one "
                        "tag per word")
    ids = np.asarray([label_map.class_id(tag, at) for tag in tags], dtype="int32")
    return " ".join(words), ids


def _multi_hot(values, label_map, at):
    """The multi-hot vector of a list of class ids or names."""
    hot = np.zeros(label_map.num_classes, dtype="float32")
    for value in values:
        hot[label_map.class_id(value, at)] = 1.0
    return hot


def _number(raw, cfg, at):
    """A finite number (`label_kind: float`)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataError(
            f"{at}: target {raw!r} in column {cfg.label_column!r} "
            "is not a finite number"
        )
    return value


def _tfds_parts(cfg):
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
