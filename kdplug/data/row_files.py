"""A data file's rows: its format (`data.format`, or the extension), the
`(line, {column: value})` rows of a TSV, CSV or JSONL file, and where a row
is in messages (`file:12`).
"""

import csv
import json
import os

from kdplug.data import tables
from kdplug.errors import DataError

EXTENSIONS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl",
              ".parquet": "parquet", ".pq": "parquet"}
# The csv module's field limit while kdplug reads (a C long on every
# platform); its default, 131,072 characters, is a document of ~20,000 words.
FIELD_SIZE_LIMIT = 2 ** 31 - 1
QUOTING_HINT = ("a field that starts with a double quote is read as quoted "
                "(it ends at the next lone quote; quotes inside are doubled): "
                "fix the quoting, or set data.quoting: none to read quotes as text")


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


def read_rows(path, fmt="auto", quoting="csv", field="data.path"):
    """`[(line_number, {column: value})]` of every data row of a text file.

    Args:
        path: a TSV, CSV or JSONL file; a `.json` file holding one JSON
            document (an object, or a list of objects) gives its object(s).
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
    if fmt == "jsonl" and path.lower().endswith(".json"):
        document = _json_document("\n".join(decoded))
        if document is not None:
            return document
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


def _json_document(text):
    """The rows of a `.json` file that holds one JSON document: an object
    (one row, e.g. a SQuAD file `{"version", "data"}`) or a list of objects
    (one row each, numbered from 1); None when it is not one document (JSON
    lines, read line by line)."""
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except (json.JSONDecodeError, DuplicateKey):
        return None
    if isinstance(document, dict):
        return [(1, document)]
    if isinstance(document, list) and all(isinstance(row, dict) for row in document):
        return list(enumerate(document, start=1))
    return None


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


def at_row(source, where):
    """`file:12` for a line number, `file, row 3` for a table row: where a
    message points."""
    return f"{source}:{where}" if isinstance(where, int) else f"{source}, {where}"
