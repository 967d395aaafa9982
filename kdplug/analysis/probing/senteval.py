"""Reading and writing probing sets in SentEval's format.

Conneau et al.'s probing data (`sentence_length.txt`, `bigram_shift.txt`,
... in SentEval's `data/probing`) has one example per line:
`split<TAB>label<TAB>sentence`, the split being `tr`, `va` or `te`. There is
no quoting: a sentence may not contain a tab or a line break.
"""

import os
import pathlib

from kdplug.analysis.probing.probing_task import SPLITS
from kdplug.analysis.probing.probing_task import ProbingTask
from kdplug.errors import DataError

SPLIT_CODES = {"tr": "train", "va": "dev", "te": "test"}
CODE_OF_SPLIT = {split: code for code, split in SPLIT_CODES.items()}


def read_senteval(path, name=None, description="", silver=False):
    """Reads a SentEval probing file into a `ProbingTask`.

    Each line is `split<TAB>label<TAB>sentence` with split `tr`, `va` or `te`
    (mapped to `"train"`, `"dev"`, `"test"`); only the line break (`\\n` or
    `\\r\\n`) is stripped, the label and the sentence are kept as they are.
    A UTF-8 byte-order mark at the start is ignored.

    Args:
        path: str or path-like. The file.
        name: str. The task name; defaults to the file's stem
            (`sentence_length` for `sentence_length.txt`).
        description: str. Saved with the task; defaults to where it was read.
        silver: bool. Whether the file's labels came from a parser
            (Conneau et al.'s syntactic sets were parsed automatically).

    Returns a `ProbingTask` whose `source` is the path.

    Raises `DataError` naming the file (and the 1-based line number) when
    the file is missing or not UTF-8, or a line has other than 3 tab-separated
    fields, an unknown split code, an empty label or an empty sentence, and
    when the result is not a usable task (see `ProbingTask`).

    Examples:

    ```python
    task = read_senteval("SentEval/data/probing/sentence_length.txt")
    task.label_names()      # ['0', '1', '2', '3', '4', '5']
    len(task.texts["train"])  # 100000
    ```
    """
    path = os.fspath(path)
    name = name if name is not None else pathlib.Path(path).stem
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise DataError(f"{path}: probing file not found") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read the probing file ({e.strerror})") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final line break ends the last line
    texts = {s: [] for s in SPLITS}
    labels = {s: [] for s in SPLITS}
    for line_no, raw in enumerate(lines, start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{path}:{line_no}: not valid UTF-8 ({e.reason} at "
                            f"byte {e.start})") from None
        split, label, text = _parse_line(line, path, line_no)
        texts[split].append(text)
        labels[split].append(label)
    return ProbingTask(
        name=name,
        texts=texts,
        labels=labels,
        description=description or f"Read from the SentEval probing file `{path}`.",
        source=path,
        silver=silver,
    )


def _parse_line(line, path, line_no):
    fields = line.split("\t")
    if len(fields) != 3:
        raise DataError(
            f"{path}:{line_no}: expected 3 tab-separated fields "
            f"(split<TAB>label<TAB>sentence), got {len(fields)}"
            + (" (an empty line)" if line == "" else "")
            + (" (the sentence may not contain a tab)" if len(fields) > 3 else ""))
    code, label, text = fields
    if code not in SPLIT_CODES:
        raise DataError(
            f"{path}:{line_no}: unknown split {code!r}; valid splits: "
            + ", ".join(f"{c} ({s})" for c, s in SPLIT_CODES.items()))
    if not label.strip():
        raise DataError(f"{path}:{line_no}: empty label")
    if not text.strip():
        raise DataError(f"{path}:{line_no}: empty sentence")
    return SPLIT_CODES[code], label, text


def write_senteval(task, path):
    """Writes a `ProbingTask` as a SentEval probing file (UTF-8, `\\n` line
    breaks; train, then dev, then test), creating the parent folders.

    `read_senteval(path, name=task.name)` reads the same task back (texts and
    labels; the description and the silver flag are not in the format: keep
    `task.to_dict()` beside the file for them).

    Args:
        task: a `ProbingTask`.
        path: str or path-like. The file to write (replaced if it exists).

    Raises `DataError` when a label or a text contains a tab or a line break,
    which the format cannot hold.

    Examples:

    ```python
    task = build_probing_task("bigram_shift", sentences)
    write_senteval(task, "analysis/probing/bigram_shift.txt")
    ```
    """
    path = os.fspath(path)
    rows = []
    for split in SPLITS:
        for i, (label, text) in enumerate(zip(task.labels[split], task.texts[split])):
            for what, value in (("label", label), ("text", text)):
                if any(c in value for c in "\t\r\n"):
                    raise DataError(
                        f"{path}: probing task {task.name!r}: {split} example "
                        f"{i} has a tab or line break in its {what} "
                        f"({value!r}); the SentEval format cannot hold it")
            rows.append(f"{CODE_OF_SPLIT[split]}\t{label}\t{text}\n")
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(rows)
