"""Multi-label data (`data.task: multi_label`): lists of class names or
ids per row, from JSONL lists or separated TSV / CSV strings, as multi-hot
labels."""

import json

import numpy as np
import pytest

from kdplug import DataError
from kdplug.config import DataConfig
from kdplug.data import read_splits


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps({"split": s, "text": t, "labels": y}) + "\n"
                            for s, t, y in rows))
    return str(path)


ROWS = [("train", "tom hanks in paris", ["PERSON", "GPE"]),
        ("train", "a dull film", []),
        ("train", "made by disney", ["ORG"]),
        ("dev", "london calling", ["GPE"]),
        ("test", "meryl and pixar", ["ORG", "PERSON"])]


def test_jsonl_lists_become_multi_hot_rows_with_inferred_names(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", ROWS)
    splits = read_splits(DataConfig(path=path, label_column="labels", num_classes=3,
                                    task="multi_label"), label_kind="multi")
    assert splits.label_map.names == ["GPE", "ORG", "PERSON"]  # sorted train names
    np.testing.assert_array_equal(splits["train"].labels,
                                  [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    assert splits["train"].labels.dtype == np.float32
    np.testing.assert_array_equal(splits["test"].labels, [[0, 1, 1]])


def test_separated_strings_in_a_tsv_and_listed_names(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text("split\ttext\tlabels\n"
                    "train\ta\tPERSON|GPE\ntrain\tb\t\ntrain\tc\t ORG \n"
                    "dev\td\tGPE\ntest\te\tORG|PERSON\n")
    cfg = DataConfig(path=str(path), label_column="labels", task="multi_label",
                     label_names=["PERSON", "ORG", "GPE"])
    splits = read_splits(cfg, label_kind="multi")
    np.testing.assert_array_equal(splits["train"].labels,
                                  [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    comma = tmp_path / "c.tsv"
    comma.write_text(path.read_text().replace("|", ","))
    cfg = DataConfig(path=str(comma), label_column="labels", task="multi_label",
                     label_names=["PERSON", "ORG", "GPE"], label_separator=",")
    np.testing.assert_array_equal(read_splits(cfg, label_kind="multi")["test"].labels,
                                  [[1, 1, 0]])


def test_bad_labels_name_the_row(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", ROWS + [("test", "x", ["PERSN"])])
    cfg = DataConfig(path=path, label_column="labels", task="multi_label",
                     label_names=["GPE", "ORG", "PERSON"])
    with pytest.raises(DataError, match=r"d.jsonl:6: label 'PERSN' in column "
                                        r"'labels' is not a known class name "
                                        r"\(did you mean 'PERSON'\?\)"):
        read_splits(cfg, label_kind="multi")
    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps({"split": "train", "text": "x", "labels": 3.5}) + "\n")
    with pytest.raises(DataError, match=r"b.jsonl:1: labels 3.5 in column 'labels' "
                                        r"are not a list or a string of names"):
        read_splits(DataConfig(path=str(bad), label_column="labels",
                               label_names=["a", "b"], validation_split=None,
                               test_split=None), label_kind="multi")
