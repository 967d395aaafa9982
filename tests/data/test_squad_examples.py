"""SQuAD rows to QA examples, both forms, and bad input."""

import json

import pytest

from kdplug.data.squad_examples import qa_examples, qa_summary, read_squad_json
from kdplug.errors import DataError

CTX = "Paris is the capital of France."
SQUAD = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [
    {"context": CTX, "qas": [
        {"id": "q1", "question": "What is the capital?",
         "answers": [{"text": "Paris", "answer_start": 0},
                     {"text": "France", "answer_start": 24}]},
        {"id": "q2", "question": "What is Rome?", "answers": [],
         "is_impossible": True}]},
    {"context": "Rome is old.", "qas": [
        {"id": "q3", "question": "What is old?",
         "answers": [{"text": "Rome", "answer_start": 0}]}]}]}]}


def flat(qid="a", question="Where?", context=CTX, texts=("Paris",), starts=(0,)):
    return {"id": qid, "question": question, "context": context,
            "answers": {"text": list(texts), "answer_start": list(starts)}}


def test_nested_json_file(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(SQUAD))
    examples = read_squad_json(path)
    assert [e.id for e in examples] == ["q1", "q2", "q3"]
    assert examples[0].answers == (("Paris", 0), ("France", 24))
    assert examples[1].is_impossible and examples[1].answers == ()
    assert examples[2].row == "data[0].paragraphs[1].qas[0]"
    assert qa_summary(examples) == {"examples": 3, "answerable": 2,
                                    "unanswerable": 1, "contexts": 2}


def test_articles_as_rows():
    examples = qa_examples(SQUAD["data"], "dev.jsonl")
    assert len(examples) == 3 and examples[0].row.startswith("row 1: data[0]")


def test_flat_rows():
    rows = [flat(), flat("b", texts=(), starts=())]
    examples = qa_examples(rows, "train.jsonl")
    assert examples[0].answers == (("Paris", 0),) and not examples[0].is_impossible
    assert examples[1].is_impossible
    assert examples[1].row == "row 2"


def test_offset_mismatch_counts_and_first_rows():
    rows = [flat(str(i), starts=(1,)) for i in range(7)] + [flat("ok")]
    with pytest.raises(DataError) as e:
        qa_examples(rows, "train.jsonl")
    text = str(e.value)
    assert text.startswith("train.jsonl: 7 answer(s) do not match")
    assert "row 1 (id '0')" in text and "row 5 (id '4')" in text
    assert "row 6" not in text and "and 2 more" in text


@pytest.mark.parametrize("row, message", [
    (flat(context="  "), "train.jsonl: row 1 (id 'a'): empty context"),
    (flat(question=""), "train.jsonl: row 1 (id 'a'): empty question"),
])
def test_empty_context_or_question(row, message):
    with pytest.raises(DataError, match="^" + message.replace("(", r"\(")
                       .replace(")", r"\)")):
        qa_examples([row], "train.jsonl")


def test_duplicate_id_names_both_rows():
    with pytest.raises(DataError, match=r"train.jsonl: id 'a' appears twice "
                       r"\(row 1 and row 3\)"):
        qa_examples([flat(), flat("b"), flat()], "train.jsonl")
