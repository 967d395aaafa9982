"""Rows to `Examples`: the text column (and the pair's), and the label of
one of five kinds (`LABEL_KINDS`): a class id or name, a finite number, a
list of classes (multi-hot), one tag per word (token classification) or an
answer span in a context (extractive question answering).
"""

import math
import warnings

import numpy as np

from kdplug.data.examples import Examples
from kdplug.data.label_map import LabelMap
from kdplug.data.row_files import at_row
from kdplug.errors import DataError

LABEL_KINDS = ("class", "float", "multi", "tags", "span")


def label_map_for(cfg, train, label_kind, source):
    """The `LabelMap` of the labels of the train split (`train`, a
    `tables.Table`) of kind `label_kind`: class ids or names (`class`), a
    list of them per row (`multi`), one tag per word (`tags`); None for
    numbers (`float`), which take no `data.label_names`."""
    if label_kind == "span":
        return None  # answers are spans of text, no classes
    if label_kind == "class":
        return LabelMap.resolve(
            cfg, [row.get(cfg.label_column) for _, row in train.rows],
            train.source, train.class_names)
    if label_kind in ("multi", "tags"):
        values = _tags if label_kind == "tags" else _label_list
        return LabelMap.resolve(
            cfg, [value for where, row in train.rows if cfg.label_column in row
                  for value in values(row[cfg.label_column], cfg,
                                      at_row(train.source, where))],
            train.source, train.class_names)
    if cfg.label_names is not None:
        raise DataError(f"{source}: data.label_names names classes, and these "
                        "labels are numbers (a regression target)")
    return None


def rows_to_examples(rows, cfg, path, label_kind="class", label_map=None):
    """`Examples` of one file's `(where, row)` pairs read with the data
    section `cfg` (columns, label kind, the label map of class names);
    errors name `path` and the row."""
    if label_kind == "span":
        return _question_rows(rows, cfg, path)
    texts, pairs, labels = [], [], []
    skipped = 0
    for where, row in rows:
        at = at_row(path, where)
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


def _question_rows(rows, cfg, path):
    """`Examples` of question answering rows (`kdplug.data.qa_examples`:
    SQuAD documents, or flat rows whose question, context and answers are
    `data.text_column`, `data.text_pair_column` and `data.label_column`):
    texts are the questions, pairs the contexts, labels an object array of
    the `QAExample`s, cut into windows once the teacher's tokenizer is
    known (`kdplug.tasks.ExtractiveQATask.prepare`)."""
    from kdplug.data.squad_examples import qa_examples

    rows = list(rows)
    examples = qa_examples(
        [row for _, row in rows], path,
        columns=(cfg.text_column, cfg.text_pair_column, cfg.label_column),
        places=[f"line {where}" if isinstance(where, int) else str(where)
                for where, _ in rows])
    if not examples:
        raise DataError(f"{path}: no questions")
    labels = np.array(examples + [None], dtype=object)[:-1]
    return Examples([e.question for e in examples], labels,
                    [e.context for e in examples], source=path)


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
