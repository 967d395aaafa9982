"""What `kdplug predict` and `kdplug evaluate` read: texts to label and
labelled files, read with a finished run's columns and classes.

Tables go through the core readers (`kdplug.data.readers`), so a file is
read as the run read its data: the same columns (`data.text_column`,
`data.text_pair_column`, `data.label_column`), quoting, label separator and
errors naming `file:line`.

Examples:

```python
texts, pairs = read_texts("reviews.txt", config.data)        # one text a line
texts, pairs = read_texts("reviews.tsv", config.data)        # the text column
examples, label_map = read_labelled("test.tsv", config.data, "class",
                                    ["neg", "pos"], run="quickstart")
```
"""

import dataclasses
import os

from kdplug.data import tables
from kdplug.data.label_map import LabelMap
from kdplug.data.label_map import is_class_id
from kdplug.data.readers import EXTENSIONS
from kdplug.data.readers import rows_to_examples
from kdplug.data.readers import load_source
from kdplug.data.readers import read_rows
from kdplug.data.readers import text_field
from kdplug.errors import DataError
from kdplug.errors import KdplugError

TEXT_FILE_HINT = "one text per line"


def check_texts(texts, flag="--text"):
    """Raises `KdplugError` naming `flag` and the text's position when a
    text is empty (or only spaces); returns the texts as a list."""
    texts = list(texts)
    for i, text in enumerate(texts, start=1):
        if not isinstance(text, str) or not text.strip():
            which = f" #{i}" if len(texts) > 1 else ""
            raise KdplugError(f"{flag}{which}: empty text {text!r}; give a non-empty "
                              "text")
    return texts


def read_texts(path, data, label_kind="class", field="--input"):
    """The texts (and second texts) of a file to label.

    A `.tsv`, `.csv`, `.jsonl` / `.json` or `.parquet` file is a table: its
    `data.text_column` (and, for a run on pairs, `data.text_pair_column`)
    is read as the run read its data; any other file holds one text per
    line (UTF-8), where an empty line is an error naming `file:line`.

    Args:
        path: the file.
        data: the run's `DataConfig`.
        label_kind: the run's task's label kind; `"tags"` (token
            classification) also takes a list of words in a JSONL cell.
        field: the flag naming the file, for messages.

    Returns:
        `(texts, pairs)`; `pairs` is None unless the run reads pairs.

    Raises:
        DataError: a missing or unreadable file, a missing column, an
            empty text (naming `file:line`), a plain-text file for a run
            on pairs, or no text at all.

    Examples:

    >>> import tempfile
    >>> from kdplug.config.sections import DataConfig
    >>> path = os.path.join(tempfile.mkdtemp(), "in.txt")
    >>> _ = open(path, "w").write("a fine film\\na dull one\\n")
    >>> read_texts(path, DataConfig(path="data.tsv"))
    (['a fine film', 'a dull one'], None)
    """
    if not os.path.isfile(path):
        what = "a folder" if os.path.isdir(path) else "no such file"
        raise DataError(f"{path}: {what} ({field}); give a text file ({TEXT_FILE_HINT}) "
                        "or a TSV / CSV / JSONL / Parquet file")
    fmt = EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        if data.text_pair_column:
            raise DataError(
                f"{path}: the run reads text pairs (data.text_pair_column "
                f"{data.text_pair_column!r}), and a plain text file ({field}) holds "
                f"one text per line; give a TSV / CSV / JSONL file with columns "
                f"{data.text_column!r} and {data.text_pair_column!r}")
        return _text_lines(path, field), None
    columns = {data.text_column: "data.text_column"}
    if data.text_pair_column:
        columns[data.text_pair_column] = "data.text_pair_column"
    rows = (tables.read_parquet(path, columns, field).rows if fmt == "parquet"
            else read_rows(path, fmt, data.quoting, field))
    texts, pairs = [], []
    for where, row in rows:
        at = _at(path, where)
        value = row.get(data.text_column)
        if label_kind == "tags" and isinstance(value, (list, tuple)):
            row = {**row, data.text_column: " ".join(map(str, value))}
        texts.append(text_field(row, data.text_column, at))
        if data.text_pair_column:
            pairs.append(text_field(row, data.text_pair_column, at))
    if not texts:
        raise DataError(f"{path}: no rows ({field})")
    return texts, pairs if data.text_pair_column else None


def read_labelled(path, data, label_kind, label_names=None, run="the run",
                  field="--data"):
    """The labelled examples of one file, read with the run's columns and
    turned into the run's class ids.

    The file is read whole (no split column needed; one is ignored), by
    the core readers: a TSV / CSV / JSONL / Parquet file or a saved
    `datasets` `Dataset`. Labels must be the run's classes: names from its
    label map (or their ids), or, for a run without names, class ids; any
    other value is an error naming the file, the row and the value.

    Args:
        path: the file.
        data: the run's `DataConfig` (columns, quoting, separator,
            `num_classes`, `bad_rows`).
        label_kind: the run's task's label kind (`kdplug.tasks.Task`).
        label_names: the run's class names in id order, or None (ids).
        run: the run's name, for messages.
        field: the flag naming the file, for messages.

    Returns:
        `(Examples, LabelMap)` (the map None for numeric targets).

    Raises:
        DataError: see above, and every error the core readers raise.

    Examples:

    ```python
    examples, label_map = read_labelled("test.tsv", config.data, "class",
                                        ["neg", "pos"], run="quickstart")
    examples.labels  # int32 class ids
    ```
    """
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file ({field})")
    fmt = data.format
    if os.path.isdir(path) or os.path.splitext(path)[1].lower() in EXTENSIONS:
        fmt = "auto"  # the file's own kind, whatever the run's data was
    cfg = dataclasses.replace(data, format=fmt)
    loaded = load_source(path, cfg, field, split_column=False)
    if isinstance(loaded, dict):
        raise DataError(
            f"{path}: a saved DatasetDict with splits {sorted(loaded)} ({field}); "
            "name one split's folder (a saved Dataset) or a TSV / CSV / JSONL file")
    if not loaded.rows:
        raise DataError(f"{path}: no rows ({field})")
    label_map = _label_map(cfg, loaded, label_kind, label_names, run)
    return rows_to_examples(loaded.rows, cfg, loaded.source, label_kind, label_map), label_map


def _label_map(cfg, table, label_kind, label_names, run):
    """The run's classes as a `LabelMap` for this file's values: names (or
    their ids, when every value is an id and none a name) for a run with
    names, ids otherwise (a name is then an error)."""
    if label_kind == "float":
        return None
    column = cfg.label_column
    values = [(where, value) for where, row in table.rows
              for value in _label_values(row.get(column), cfg, label_kind)]
    if label_names is None:
        for where, value in values:
            if not is_class_id(value):
                raise DataError(
                    f"{_at(table.source, where)}: label {value!r} in column "
                    f"{column!r} is not a class id; run {run!r} has no class names, "
                    f"its classes are the ids 0..{cfg.num_classes - 1}")
        return LabelMap(cfg.num_classes, None, "ids", None, column)
    named = dataclasses.replace(cfg, label_names=list(label_names),
                                num_classes=len(label_names))
    label_map = LabelMap.resolve(named, [value for _, value in values], table.source)
    label_map.origin = f"the classes of run {run!r}"
    return label_map


def _label_values(value, cfg, label_kind):
    """The label values of one row's label cell: one class, or a list /
    separated string (multi-label: `data.label_separator`; tags: spaces)."""
    if value is None:
        return []
    if label_kind == "class":
        return [value] if str(value).strip() else []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        parts = value.split() if label_kind == "tags" else value.split(cfg.label_separator)
        return [part for part in parts if part.strip()]
    return [value]


def _text_lines(path, field):
    """The lines of a UTF-8 text file, each a non-empty text."""
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    if lines and lines[-1] in (b"", b"\r"):
        lines.pop()  # the last line's newline
    texts = []
    for i, line in enumerate(lines, start=1):
        try:
            text = line.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as e:
            raise DataError(f"{path}:{i}: not valid UTF-8 ({e.reason} at byte "
                            f"{e.start}) ({field})") from None
        if i == 1 and text.startswith("\ufeff"):
            text = text[1:]  # a byte-order mark
        if not text.strip():
            raise DataError(f"{path}:{i}: empty line ({field} holds {TEXT_FILE_HINT}; "
                            "remove blank lines)")
        texts.append(text)
    if not texts:
        raise DataError(f"{path}: no text ({field} holds {TEXT_FILE_HINT})")
    return texts


def _at(source, where):
    """`file:12` for a line number, `file, row 3` for a table row (as the
    core readers write it)."""
    return f"{source}:{where}" if isinstance(where, int) else f"{source}, {where}"
