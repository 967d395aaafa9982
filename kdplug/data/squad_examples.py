"""SQuAD v1.1 / v2.0 question answering examples from rows: the nested
SQuAD JSON (`data[].paragraphs[].qas[]`) and the flat column form Hugging
Face `squad` uses (`id`, `question`, `context`, `answers` with `text` and
`answer_start` lists). No TensorFlow."""

import dataclasses
import json
import numbers

from kdplug.errors import DataError

__all__ = ["QAExample", "qa_examples", "qa_summary", "read_squad_json"]

_SHOWN = 5  # offset mismatches listed in the error
FLAT_COLUMNS = ("question", "context", "answers")


@dataclasses.dataclass(frozen=True)
class QAExample:
    """One question over one context.

    Args:
        id: the question id (unique in a file).
        question: the question text.
        context: the context text.
        answers: gold answers as (text, char_start) pairs; empty when
            unanswerable.
        is_impossible: True for a SQuAD v2.0 unanswerable question.
        row: where it came from, for errors ("row 3" or
            "data[0].paragraphs[1].qas[2]").

    Examples:
        >>> QAExample("q1", "Where?", "in Paris", (("Paris", 3),)).answers[0]
        ('Paris', 3)
    """

    id: str
    question: str
    context: str
    answers: tuple = ()
    is_impossible: bool = False
    row: str = ""


def read_squad_json(path):
    """Read a SQuAD-format JSON file ({"version", "data": [...]}).

    Args:
        path: the file.

    Returns:
        A list of `QAExample` (`qa_examples` of its content).

    Examples:
        >>> read_squad_json("dev-v1.1.json")  # doctest: +SKIP
    """
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except FileNotFoundError:
        raise DataError(f"{path}: data file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: not a SQuAD JSON file ({e})") from None
    return qa_examples([document], path)


def _nested(rows):
    """Yield (row label, qa dict, context) from SQuAD documents/articles."""
    for r, row in enumerate(rows):
        articles = row["data"] if "data" in row else [row]
        prefix = "data" if "data" in row else f"row {r + 1}: data"
        for a, article in enumerate(articles):
            for p, paragraph in enumerate(article.get("paragraphs", ())):
                for q, qa in enumerate(paragraph.get("qas", ())):
                    yield (f"{prefix}[{a}].paragraphs[{p}].qas[{q}]", qa,
                           paragraph.get("context"))


def _flat(rows, columns, places):
    question, context, answers_column = columns
    for r, row in enumerate(rows):
        answers = row.get(answers_column) or {"text": [], "answer_start": []}
        if not isinstance(answers, dict):  # one answer per row's list, SQuAD style
            answers = {"text": [a.get("text") for a in answers],
                       "answer_start": [a.get("answer_start") for a in answers]}
        qa = {"id": row.get("id"), "question": row.get(question),
              "is_impossible": row.get("is_impossible"),
              "answers": [{"text": t, "answer_start": _integer(s)} for t, s in zip(
                  list(answers.get("text", [])), list(answers.get("answer_start", [])))]}
        yield places[r] if places else f"row {r + 1}", qa, row.get(context)


def _integer(value):
    """A whole number as `int` (NumPy's too, as Parquet gives them); other
    values unchanged, for the offset check to refuse."""
    return int(value) if isinstance(value, numbers.Integral) else value


def qa_examples(rows, file, columns=FLAT_COLUMNS, places=None):
    """Question answering examples from rows of either SQuAD form.

    Args:
        rows: dicts from a row reader: whole SQuAD documents (a `data` key),
            SQuAD articles (a `paragraphs` key) or flat rows (`id`,
            `question`, `context`, `answers`={"text": [...],
            "answer_start": [...]}, optional `is_impossible`).
        file: the file name, for errors.
        columns: the flat rows' (question, context, answers) columns
            (`data.text_column`, `data.text_pair_column`,
            `data.label_column`); SQuAD's own keys by default.
        places: where each row is, for errors (e.g. `"line 3"`); `row N`
            by default.

    Returns:
        A list of `QAExample`. A question without answers is unanswerable
        (`is_impossible` True) whether or not the row says so.

    Raises:
        DataError: an empty context or question (file and row); a duplicate
            id (file, id and both rows); answers whose text is not
            `context[start:start + len(text)]` (their count and the first
            rows).

    Examples:
        >>> rows = [{"id": "q1", "question": "Where?", "context": "in Paris",
        ...          "answers": {"text": ["Paris"], "answer_start": [3]}}]
        >>> qa_examples(rows, "train.jsonl")[0].answers
        (('Paris', 3),)
    """
    rows = list(rows)
    nested = any(isinstance(r, dict) and ("data" in r or "paragraphs" in r)
                 for r in rows)
    if not all(isinstance(r, dict) for r in rows):
        raise DataError(f"{file}: each row must be an object")
    examples, seen, mismatches = [], {}, []
    for label, qa, context in (_nested(rows) if nested else _flat(rows, columns, places)):
        qid = qa.get("id")
        where = f"{file}: {label}" + (f" (id {qid!r})" if qid is not None else "")
        if qid is None or str(qid) == "":
            raise DataError(f"{where}: the question has no id")
        qid = str(qid)
        if not isinstance(context, str) or not context.strip():
            raise DataError(f"{where}: empty context")
        question = qa.get("question")
        if not isinstance(question, str) or not question.strip():
            raise DataError(f"{where}: empty question")
        if qid in seen:
            raise DataError(f"{file}: id {qid!r} appears twice ({seen[qid]} "
                            f"and {label})")
        seen[qid] = label
        answers = []
        for answer in qa.get("answers") or ():
            text, start = answer.get("text"), answer.get("answer_start")
            if (not isinstance(text, str) or not isinstance(start, int)
                    or isinstance(start, bool) or start < 0
                    or context[start:start + len(text)] != text or not text):
                mismatches.append(f"{label} (id {qid!r}): {text!r} at {start!r}")
                continue
            answers.append((text, start))
        impossible = bool(qa.get("is_impossible")) or not answers
        examples.append(QAExample(qid, question, context,
                                  () if impossible else tuple(answers),
                                  impossible, label))
    if mismatches:
        shown = "; ".join(mismatches[:_SHOWN])
        more = f"; and {len(mismatches) - _SHOWN} more" if len(mismatches) > _SHOWN else ""
        raise DataError(
            f"{file}: {len(mismatches)} answer(s) do not match the context "
            f"at their answer_start (text != context[start:start+len(text)]): "
            f"{shown}{more}")
    return examples


def qa_summary(examples):
    """Counts for `kdplug validate` to print.

    Args:
        examples: `QAExample`s.

    Returns:
        {"examples", "answerable", "unanswerable", "contexts"} (distinct
        context texts).

    Examples:
        >>> qa_summary([QAExample("a", "q?", "c", (("c", 0),)),
        ...             QAExample("b", "q?", "c", (), True)])
        {'examples': 2, 'answerable': 1, 'unanswerable': 1, 'contexts': 1}
    """
    unanswerable = sum(1 for e in examples if e.is_impossible)
    return {"examples": len(examples),
            "answerable": len(examples) - unanswerable,
            "unanswerable": unanswerable,
            "contexts": len({e.context for e in examples})}
