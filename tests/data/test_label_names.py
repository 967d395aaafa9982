"""Class names as labels (issue #17): `data.label_names`, names inferred
from the train split, and integer ids exactly as before."""

import numpy as np
import pytest

from kdplug import DataError
from kdplug.config import DataConfig
from kdplug.data import LabelMap
from kdplug.data import read_splits


def write_tsv(path, rows):
    path.write_text("split\ttext\tlabel\n" + "".join(
        f"{s}\t{t}\t{y}\n" for s, t, y in rows))
    return str(path)


NAMED = [("train", "a fine film", "pos"), ("train", "a dull film", "neg"),
         ("train", "so so", "neutral"), ("train", "great", "pos"),
         ("dev", "weak plot", "neg"), ("test", "loved it", "pos")]


def test_inferred_names_are_the_sorted_train_names(tmp_path):
    path = write_tsv(tmp_path / "d.tsv", NAMED)
    splits = read_splits(DataConfig(path=path, num_classes=3))
    # sorted: neg 0, neutral 1, pos 2
    assert splits.label_map.names == ["neg", "neutral", "pos"]
    assert splits.label_map.origin == "inferred from the train split"
    np.testing.assert_array_equal(splits["train"].labels, [2, 0, 1, 2])
    np.testing.assert_array_equal(splits["validation"].labels, [0])
    np.testing.assert_array_equal(splits["test"].labels, [2])


def test_inferred_names_must_be_num_classes(tmp_path):
    path = write_tsv(tmp_path / "d.tsv", NAMED)
    with pytest.raises(DataError, match=r"d.tsv: the train split's labels are 3 "
                                        r"names \(neg, neutral, pos\), and "
                                        r"data.num_classes is 2; .*data.label_names"):
        read_splits(DataConfig(path=path))


def test_label_names_give_the_ids_and_num_classes(tmp_path):
    path = write_tsv(tmp_path / "d.tsv", NAMED)
    cfg = DataConfig(path=path, label_names=["pos", "neg", "neutral"])
    assert cfg.num_classes == 3
    splits = read_splits(cfg)
    np.testing.assert_array_equal(splits["train"].labels, [0, 1, 2, 0])
    assert splits.label_map.to_json() == {
        "names": ["pos", "neg", "neutral"], "ids": {"pos": 0, "neg": 1, "neutral": 2},
        "label_column": "label", "origin": "data.label_names"}


def test_an_unknown_name_in_dev_names_file_row_value_and_the_known_names(tmp_path):
    path = write_tsv(tmp_path / "d.tsv", NAMED[:2] + [("dev", "meh", "neutral"),
                                                      ("test", "ok", "pos")])
    with pytest.raises(DataError, match=r"d.tsv:4: label 'neutral' in column 'label' "
                                        r"is not a known class name; known: neg, pos "
                                        r"\(inferred from the train split\)"):
        read_splits(DataConfig(path=path))
    with pytest.raises(DataError, match=r"label 'postive' .*did you mean 'positive'"):
        read_splits(DataConfig(path=write_tsv(tmp_path / "e.tsv", [
            ("train", "a", "positive"), ("train", "b", "negative"),
            ("dev", "c", "postive"), ("test", "d", "negative")])))


def test_bad_label_names(tmp_path):
    with pytest.raises(ValueError, match=r"lists 'pos' more than once"):
        DataConfig(path="d.tsv", label_names=["pos", "neg", "pos"])
    with pytest.raises(ValueError, match=r"lists 2 classes and num_classes is 3"):
        DataConfig(path="d.tsv", label_names=["neg", "pos"], num_classes=3)
    with pytest.raises(ValueError, match="at least two"):
        DataConfig(path="d.tsv", label_names=["pos"])


def test_integer_labels_keep_working_exactly_as_before(tmp_path):
    rows = [("train", "a", "1"), ("train", "b", "0"), ("dev", "c", "1"),
            ("test", "d", "0")]
    splits = read_splits(DataConfig(path=write_tsv(tmp_path / "d.tsv", rows)))
    assert splits.label_map.names is None and not splits.label_map.named
    np.testing.assert_array_equal(splits["train"].labels, [1, 0])
    # one name among ids is a bad row, as before (not a column of names)
    path = write_tsv(tmp_path / "e.tsv", rows + [("train", "e", "pos")])
    with pytest.raises(DataError, match=r"e.tsv:6: label 'pos' .*not an integer class id"):
        read_splits(DataConfig(path=path))


def test_label_names_can_name_integer_ids(tmp_path):
    rows = [("train", "a", "1"), ("train", "b", "0"), ("dev", "c", "1"),
            ("test", "d", "0")]
    splits = read_splits(DataConfig(path=write_tsv(tmp_path / "d.tsv", rows),
                                    label_names=["neg", "pos"]))
    np.testing.assert_array_equal(splits["train"].labels, [1, 0])
    assert splits.label_map.values == "ids" and splits.label_map.names == ["neg", "pos"]


def test_names_that_look_like_numbers_are_names(tmp_path):
    # star ratings 1..3 named in order: "1" is class 0, not class 1
    rows = [("train", "a", "1"), ("train", "b", "3"), ("train", "c", "2"),
            ("dev", "d", "3"), ("test", "e", "1")]
    splits = read_splits(DataConfig(path=write_tsv(tmp_path / "d.tsv", rows),
                                    label_names=["1", "2", "3"]))
    np.testing.assert_array_equal(splits["train"].labels, [0, 2, 1])


def test_float_targets_refuse_label_names(tmp_path):
    rows = [("train", "a", "0.5"), ("train", "b", "1.5"), ("test", "c", "1")]
    with pytest.raises(DataError, match="label_names names classes"):
        read_splits(DataConfig(path=write_tsv(tmp_path / "d.tsv", rows),
                               validation_split=None, label_names=["a", "b"]),
                    label_kind="float")


def test_label_map_by_hand():
    ids = LabelMap(3)
    assert [ids.class_id(v, "f:1") for v in (0, "2", 1.0, " 1")] == [0, 2, 1, 1]
    with pytest.raises(DataError, match=r"f:1: label 3 is outside .* 0..2"):
        ids.class_id("3", "f:1")
    names = LabelMap(2, ["neg", "pos"], "names", "data.label_names")
    assert names.class_id(" pos ", "f:1") == 1
    assert names.describe() == "0 neg, 1 pos (data.label_names)"
