"""Files of texts: one text per line, or a table's text column.

What `kdplug predict` labels (`--input`) and what a stage reads from a
corpus of its own (`kdplug.data.TextCorpus`) are read here, so both take the
same files with the same errors (naming `file:line`).
"""

import os

from kdplug.data import tables
from kdplug.data.label_kinds import text_field
from kdplug.data.row_files import EXTENSIONS
from kdplug.data.row_files import at_row
from kdplug.data.row_files import read_rows
from kdplug.errors import DataError

TEXT_FILE_HINT = "one text per line"


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
        at = at_row(path, where)
        value = row.get(data.text_column)
        if label_kind == "tags" and isinstance(value, (list, tuple)):
            row = {**row, data.text_column: " ".join(map(str, value))}
        texts.append(text_field(row, data.text_column, at))
        if data.text_pair_column:
            pairs.append(text_field(row, data.text_pair_column, at))
    if not texts:
        raise DataError(f"{path}: no rows ({field})")
    return texts, pairs if data.text_pair_column else None


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
