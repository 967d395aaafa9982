"""Token-classification data (`data.task: token_classification`): words
and one tag per word, read as lists or space-separated strings, aligned to
the teacher's word pieces by the task."""

import json

import numpy as np
import pytest

from kdplug import DataError
from kdplug.config import DataConfig
from kdplug.data import TextEncoder
from kdplug.data import read_splits
from kdplug.tasks import get_task
from kdplug.testing import toy_vocabulary

import keras_hub


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(dict(zip(("split", "words", "tags"), row))) + "\n"
                            for row in rows))
    return str(path)


ROWS = [("train", ["a", "good", "fine", "film"], ["O", "B-POS", "I-POS", "O"]),
        ("train", ["bad", "awful", "plot"], ["B-NEG", "I-NEG", "O"]),
        ("dev", ["fine"], ["B-POS"]),
        ("test", ["the", "dull", "movie"], ["O", "B-NEG", "O"])]
CONFIG = dict(task="token_classification", text_column="words", label_column="tags")


def test_words_and_tags_are_read_and_aligned_to_word_pieces(tmp_path):
    splits = read_splits(DataConfig(path=write_jsonl(tmp_path / "t.jsonl", ROWS),
                                    num_classes=5, **CONFIG), label_kind="tags")
    assert splits.label_map.names == ["B-NEG", "B-POS", "I-NEG", "I-POS", "O"]
    assert splits["train"].texts == ["a good fine film", "bad awful plot"]
    np.testing.assert_array_equal(splits["train"].labels[1], [0, 2, 4])
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=toy_vocabulary())
    encoder = TextEncoder(tokenizer, 8)
    task = get_task("token_classification")
    task.prepare(splits, encoder)
    assert task.label_names == splits.label_map.names
    # [CLS] bad awful plot [SEP] [PAD]...: the tags on the words' pieces
    np.testing.assert_array_equal(splits["train"].labels[1],
                                  [-1, 0, 2, 4, -1, -1, -1, -1])
    np.testing.assert_array_equal(
        encoder.encode_examples(splits["train"])["token_ids"][1][1:4],
        np.asarray(tokenizer("bad awful plot")))
    assert task.prepare(splits, encoder) is splits  # aligned once


def test_space_separated_strings_in_a_tsv(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("split\twords\ttags\n" + "".join(
        f"{s}\t{' '.join(w)}\t{' '.join(t)}\n" for s, w, t in ROWS))
    splits = read_splits(DataConfig(path=str(path), num_classes=5, **CONFIG),
                         label_kind="tags")
    np.testing.assert_array_equal(splits["test"].labels[0], [4, 0, 4])


@pytest.mark.parametrize("row, message", [
    (("train", ["a", "film"], ["O"]), r"t.jsonl:5: 2 words in column 'words' and 1 tags "
                                      r"in column 'tags'; give one tag per word"),
    (("train", ["a b", "film"], ["O", "O"]), r"t.jsonl:5: word 'a b' in column 'words' "
                                             r"is empty or holds a space"),
    (("train", [], []), r"t.jsonl:5: no words in column 'words'"),
    (("train", ["a"], ["B-PSO"]), r"t.jsonl:5: label 'B-PSO' in column 'tags' is not a "
                                  r"known class name \(did you mean 'B-POS'\?\)"),
])
def test_bad_rows_name_the_line(tmp_path, row, message):
    path = write_jsonl(tmp_path / "t.jsonl", ROWS + [row])
    names = ["B-NEG", "B-POS", "I-NEG", "I-POS", "O"]
    with pytest.raises(DataError, match=message):
        read_splits(DataConfig(path=path, label_names=names, **CONFIG), label_kind="tags")


def test_a_student_with_one_prediction_per_sentence_is_refused():
    with pytest.raises(Exception, match="student.kind 'bilstm' built a object with one "
                                        "prediction per sentence; .* truncated or narrow"):
        get_task("token_classification").check_student(object(), "bilstm")
