import json

import numpy as np
import pytest

from kdplug.analysis.probing import ProbingTask
from kdplug.analysis.probing import read_senteval
from kdplug.analysis.probing import write_senteval
from kdplug.errors import DataError

LINES = [
    "tr\tPast\tShe left .",
    "tr\tPres\tShe leaves .",
    "tr\tPast\tHe came , and \"they\" stayed .",
    "va\tPres\tHe comes .",
    "te\tPast\tIt ended .",
    "te\tPres\tIt ends .",
    "te\tPres\tIt goes .",
]


def write(tmp_path, lines, name="tense.txt", ending="\n"):
    path = tmp_path / name
    path.write_bytes("".join(line + ending for line in lines).encode("utf-8"))
    return path


def test_reads_splits_labels_and_statistics(tmp_path):
    path = write(tmp_path, LINES)
    task = read_senteval(path)
    assert task.name == "tense"  # the file's stem
    assert task.source == str(path)
    assert not task.silver
    assert task.texts == {
        "train": ["She left .", "She leaves .", "He came , and \"they\" stayed ."],
        "dev": ["He comes ."],
        "test": ["It ended .", "It ends .", "It goes ."],
    }
    assert task.labels == {
        "train": ["Past", "Pres", "Past"], "dev": ["Pres"],
        "test": ["Past", "Pres", "Pres"],
    }
    assert task.label_names() == ["Past", "Pres"]
    np.testing.assert_array_equal(task.label_ids("test"), [0, 1, 1])
    assert task.label_ids("train").dtype == np.int32
    assert task.label_distribution() == {
        "train": {"Past": 2, "Pres": 1},
        "dev": {"Past": 0, "Pres": 1},
        "test": {"Past": 1, "Pres": 2},
    }
    # train's majority is Past (2 of 3); Past is 1 of the 3 test labels
    assert task.majority_baseline() == pytest.approx(1 / 3)
    meta = task.to_dict()
    assert json.loads(json.dumps(meta)) == meta
    assert "texts" not in meta
    assert meta["sizes"] == {"train": 3, "dev": 1, "test": 3}
    assert meta["majority_baseline"] == pytest.approx(1 / 3)
    assert meta["label_names"] == ["Past", "Pres"]
    assert meta["name"] == "tense" and meta["silver"] is False


def test_name_crlf_byte_order_mark_and_kept_spaces(tmp_path):
    lines = ["\ufefftr\t0\t  Padded sentence .", *LINES[1:]]
    path = write(tmp_path, lines, name="x.txt", ending="\r\n")
    task = read_senteval(path, name="length")
    assert task.name == "length"
    assert task.texts["train"][0] == "  Padded sentence ."  # only the line break goes
    assert task.labels["train"] == ["0", "Pres", "Past"]
    assert task.texts["test"][-1] == "It goes ."


@pytest.mark.parametrize("bad, line_no, message", [
    ("tr\tPast", 3, "expected 3 tab-separated fields"),
    ("tr\tPast\tShe\tleft .", 3, "the sentence may not contain a tab"),
    ("", 3, "an empty line"),
    ("train\tPast\tShe left .", 3, "unknown split 'train'; valid splits: tr (train), "
                                   "va (dev), te (test)"),
    ("te\t\tShe left .", 3, "empty label"),
    ("te\tPast\t   ", 3, "empty sentence"),
])
def test_every_bad_line_names_the_file_and_line(tmp_path, bad, line_no, message):
    path = write(tmp_path, [*LINES[:2], bad, *LINES[2:]])
    with pytest.raises(DataError) as e:
        read_senteval(path)
    assert f"{path}:{line_no}: " in str(e.value)
    assert message in str(e.value)


def test_invalid_utf8_and_missing_file(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"tr\tA\tok\nte\tB\tcaf\xe9\n")
    with pytest.raises(DataError, match=r"bad\.txt:2: not valid UTF-8"):
        read_senteval(path)
    with pytest.raises(DataError, match=r"nope\.txt: probing file not found"):
        read_senteval(tmp_path / "nope.txt")


def test_an_unusable_file_names_task_and_file(tmp_path):
    path = write(tmp_path, [line for line in LINES if not line.startswith("te")])
    with pytest.raises(DataError) as e:
        read_senteval(path)
    assert str(e.value) == f"probing task 'tense' ({path}): split 'test' is empty"
    path = write(tmp_path, ["tr\tPast\ta", "tr\tPast\tb", "te\tPres\tc"], name="one.txt")
    with pytest.raises(DataError, match=r"'one' \(.*one\.txt\): the train split "
                                        r"has 1 distinct label \('Past'\)"):
        read_senteval(path)


def test_write_then_read_round_trip(tmp_path):
    task = read_senteval(write(tmp_path, LINES))
    out = tmp_path / "saved" / "tense.txt"
    write_senteval(task, out)
    assert out.read_text(encoding="utf-8").splitlines() == LINES
    again = read_senteval(out)
    assert again.texts == task.texts and again.labels == task.labels
    assert again.to_dict()["label_distribution"] == task.to_dict()["label_distribution"]


def test_write_refuses_what_the_format_cannot_hold(tmp_path):
    task = ProbingTask("t", {"train": ["a\tb", "c"], "dev": [], "test": ["d"]},
                       {"train": ["x", "y"], "dev": [], "test": ["x"]})
    with pytest.raises(DataError, match=r"'t': train example 0 has a tab or line "
                                        r"break in its text"):
        write_senteval(task, tmp_path / "t.txt")


def test_probing_task_validation():
    ok = {"train": ["a", "b"], "dev": [], "test": ["c"]}
    labels = {"train": ["x", "y"], "dev": [], "test": ["x"]}
    with pytest.raises(DataError, match=r"probing task 't': texts must have exactly "
                                        r"the splits train, dev, test; missing dev"):
        ProbingTask("t", {"train": ["a"], "test": ["c"]}, labels)
    with pytest.raises(DataError, match="unknown validation"):
        ProbingTask("t", ok, {**labels, "validation": []})
    with pytest.raises(DataError, match="split 'train' has 2 texts but 1 labels"):
        ProbingTask("t", ok, {**labels, "train": ["x"]})
    with pytest.raises(DataError, match=r"\(built from 3 sentences\): split 'test' "
                                        r"is empty"):
        ProbingTask("t", {**ok, "test": []}, {**labels, "test": []},
                    source="built from 3 sentences")
    task = ProbingTask("t", ok, labels)  # an empty dev split is fine
    assert task.sizes() == {"train": 2, "dev": 0, "test": 1}
    # a tie in train goes to the first label name: x; test is all x
    assert task.majority_baseline() == 1.0
