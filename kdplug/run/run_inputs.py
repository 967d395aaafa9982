"""What `kdplug predict` and `kdplug evaluate` read: texts to label
(`kdplug.data.text_files.read_texts`) and labelled files, read with a
finished run's columns and classes.

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

from kdplug.data.label_map import LabelMap
from kdplug.data.label_map import is_class_id
from kdplug.data.readers import EXTENSIONS
from kdplug.data.readers import rows_to_examples
from kdplug.data.readers import load_source
from kdplug.data.text_files import at_row
from kdplug.errors import DataError
from kdplug.errors import KdplugError

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
    if label_kind in ("float", "span"):  # numbers, answer spans: no classes
        return None
    column = cfg.label_column
    values = [(where, value) for where, row in table.rows
              for value in _label_values(row.get(column), cfg, label_kind)]
    if label_names is None:
        for where, value in values:
            if not is_class_id(value):
                raise DataError(
                    f"{at_row(table.source, where)}: label {value!r} in column "
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

