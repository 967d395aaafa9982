"""`TrainedRun`'s folder checks and what `kdplug predict` / `evaluate` read
(`kdplug.run.run_inputs`), without a trained run: every test here is
cheap. The commands on a real toy run: tests/run/test_finished_run.py."""

import numpy as np
import pytest

from kdplug.config.sections import DataConfig
from kdplug.data.text_files import read_texts
from kdplug.errors import DataError
from kdplug.errors import KdplugError
from kdplug.run.run_inputs import check_texts
from kdplug.run.run_inputs import read_labelled
from kdplug.run.trained_run import TrainedRun
from kdplug.run.trained_run import softmax
from kdplug.run.trained_run import word_tags

DATA = DataConfig(path="data.tsv")
PAIRS = DataConfig(path="data.tsv", text_pair_column="text_b")


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


# ------------------------------------------------------------ run folders
def test_missing_and_unfinished_run_folders_are_clear_errors(tmp_path):
    with pytest.raises(KdplugError, match="no such run folder"):
        TrainedRun(str(tmp_path / "nope"))
    with pytest.raises(KdplugError, match="a file, not a run folder"):
        TrainedRun(write(tmp_path / "file", "x"))
    with pytest.raises(KdplugError, match="no config.yaml; not a run folder"):
        TrainedRun(str(tmp_path))
    write(tmp_path / "config.yaml", "name: toy\n")
    with pytest.raises(KdplugError, match=r"no student.keras \(nor export/student"
                                          r".keras\).*must finish first"):
        TrainedRun(str(tmp_path))
    with pytest.raises(ValueError, match="roles must be among"):
        TrainedRun(str(tmp_path), roles=("both",))


# ---------------------------------------------------------- texts to label
def test_read_texts_text_file_one_text_a_line(tmp_path):
    path = write(tmp_path / "in.txt", "\ufeffa fine film\r\na dull one\n")
    assert read_texts(path, DATA) == (["a fine film", "a dull one"], None)
    bad = write(tmp_path / "gap.txt", "a fine film\n\na dull one\n")
    with pytest.raises(DataError, match=r"gap.txt:2: empty line \(--input"):
        read_texts(bad, DATA)
    with pytest.raises(DataError, match=r"empty.txt: no text \(--input"):
        read_texts(write(tmp_path / "empty.txt", ""), DATA)
    with pytest.raises(DataError, match=r"nope.txt: no such file \(--input\)"):
        read_texts(str(tmp_path / "nope.txt"), DATA)
    with pytest.raises(DataError, match="reads text pairs.*columns 'text' and 'text_b'"):
        read_texts(path, PAIRS)


def test_read_texts_tables_read_the_run_columns(tmp_path):
    tsv = write(tmp_path / "in.tsv", "id\ttext\ttext_b\n1\tgood\tfine\n2\tbad\tdull\n")
    assert read_texts(tsv, DATA) == (["good", "bad"], None)
    assert read_texts(tsv, PAIRS) == (["good", "bad"], ["fine", "dull"])
    jsonl = write(tmp_path / "in.jsonl", '{"text": "good"}\n{"text": ""}\n')
    with pytest.raises(DataError, match=r"in.jsonl:2: empty text in column 'text'"):
        read_texts(jsonl, DATA)
    csv = write(tmp_path / "in.csv", "sentence\nhello\n")
    with pytest.raises(DataError, match=r"in.csv:2: no column 'text'"):
        read_texts(csv, DATA)
    words = write(tmp_path / "w.jsonl", '{"text": ["The", "Rock"]}\n')
    assert read_texts(words, DATA, label_kind="tags") == (["The Rock"], None)


def test_check_texts_names_the_empty_one():
    assert check_texts(["a", "b"]) == ["a", "b"]
    with pytest.raises(KdplugError, match=r"--text #2: empty text ' '"):
        check_texts(["a", " "])
    with pytest.raises(KdplugError, match=r"--pair: empty text ''"):
        check_texts([""], "--pair")


# --------------------------------------------------------- labelled files
def test_read_labelled_maps_the_run_class_names(tmp_path):
    named = write(tmp_path / "named.tsv", "text\tlabel\tsplit\ngood\tpos\tx\nbad\tneg\tx\n")
    examples, label_map = read_labelled(named, DATA, "class", ["neg", "pos"], run="toy")
    assert examples.texts == ["good", "bad"] and examples.labels.tolist() == [1, 0]
    ids = write(tmp_path / "ids.tsv", "text\tlabel\ngood\t1\nbad\t0\n")
    assert read_labelled(ids, DATA, "class", ["neg", "pos"])[0].labels.tolist() == [1, 0]
    assert read_labelled(ids, DATA, "class")[0].labels.tolist() == [1, 0]
    unknown = write(tmp_path / "unknown.tsv", "text\tlabel\ngood\tpos\nmeh\tmaybe\n")
    with pytest.raises(DataError, match=r"unknown.tsv:3: label 'maybe' in column "
                                        r"'label' is not a known class name.*"
                                        r"known: neg, pos \(the classes of run 'toy'\)"):
        read_labelled(unknown, DATA, "class", ["neg", "pos"], run="toy")
    with pytest.raises(DataError, match=r"named.tsv:2: label 'pos' in column 'label' "
                                        r"is not a class id; run 'toy' has no class "
                                        r"names, its classes are the ids 0..1"):
        read_labelled(named, DATA, "class", None, run="toy")
    with pytest.raises(DataError, match=r"ids.tsv:2: label 5 is outside"):
        read_labelled(write(tmp_path / "ids.tsv", "text\tlabel\ngood\t5\n"), DATA, "class")
    with pytest.raises(DataError, match=r"nope.tsv: no such file \(--data\)"):
        read_labelled(str(tmp_path / "nope.tsv"), DATA, "class")


def test_read_labelled_numbers_and_label_sets(tmp_path):
    scores = write(tmp_path / "s.csv", "text,label\ngood,0.5\nbad,-1\n")
    examples, label_map = read_labelled(scores, DATA, "float")
    assert label_map is None and examples.labels.tolist() == [0.5, -1.0]
    sets = write(tmp_path / "m.jsonl", '{"text": "a", "label": ["pos", "funny"]}\n'
                                       '{"text": "b", "label": []}\n')
    data = DataConfig(path="d.jsonl", label_names=["pos", "funny", "sad"])
    examples, _ = read_labelled(sets, data, "multi", data.label_names)
    assert examples.labels.tolist() == [[1, 1, 0], [0, 0, 0]]


# ------------------------------------------------------- output helpers
def test_softmax_and_word_tags():
    probabilities = softmax(np.array([[1000.0, 1000.0], [0.0, np.log(3.0)]]))
    np.testing.assert_allclose(probabilities, [[0.5, 0.5], [0.25, 0.75]])
    outputs = np.array([[9, 0, 0], [0, 5, 0], [0, 0, 5], [0, 5, 0], [9, 0, 0]])
    # word 0 on piece 1, word 1 on piece 2 (piece 3 is its second piece),
    # word 2 cut off by the sequence length
    assert word_tags(outputs, np.array([-1, 0, 1, -1, -1]), 3,
                     ["O", "B-PER", "I-PER"].__getitem__) == ["B-PER", "I-PER", None]
