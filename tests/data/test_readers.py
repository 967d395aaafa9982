import json

import numpy as np
import pytest

from kdplug import DataError
from kdplug.config import DataConfig
from kdplug.data import Examples
from kdplug.data import read_splits

ROWS = [
    ("1", "train", "good movie", "1"),
    ("2", "train", "bad movie", "0"),
    ("3", "dev", "fine film", "1"),
    ("4", "test", "awful film", "0"),
]


def write_tsv(path, rows=ROWS, header="id\tsplit\ttext\tlabel"):
    path.write_text(header + "\n" + "\n".join("\t".join(r) for r in rows) + "\n")
    return str(path)


def test_tsv_csv_jsonl_read_the_same(tmp_path):
    tsv = write_tsv(tmp_path / "d.tsv")
    csv = tmp_path / "d.csv"
    csv.write_text("id,split,text,label\n" + "\n".join(",".join(r) for r in ROWS))
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("\n".join(json.dumps(dict(zip(["id", "split", "text", "label"], r)))
                               for r in ROWS))
    results = [read_splits(DataConfig(path=str(p))) for p in (tsv, csv, jsonl)]
    for splits in results:
        assert splits["train"].texts == ["good movie", "bad movie"]
        np.testing.assert_array_equal(splits["train"].labels, [1, 0])
        assert splits["validation"].texts == ["fine film"]
        assert splits["test"].texts == ["awful film"]


def test_bundled_data_has_the_documented_split():
    import pathlib

    path = pathlib.Path(__file__).parents[2] / "data" / "movie_snippets.tsv"
    splits = read_splits(DataConfig(path=str(path)))
    assert (len(splits["train"]), len(splits["validation"]), len(splits["test"])) == (
        8484, 1061, 1060)
    assert set(np.unique(splits["train"].labels)) == {0, 1}


def test_empty_text_fails_with_line_number_or_is_skipped(tmp_path):
    rows = ROWS + [("5", "train", " ", "1")]
    path = write_tsv(tmp_path / "d.tsv", rows)
    with pytest.raises(DataError, match=r"d.tsv:6: empty text in column 'text'"):
        read_splits(DataConfig(path=path))
    with pytest.warns(UserWarning, match="skipped 1 bad row"):
        splits = read_splits(DataConfig(path=path, bad_rows="skip"))
    assert len(splits["train"]) == 2


def test_label_outside_declared_classes(tmp_path):
    path = write_tsv(tmp_path / "d.tsv", ROWS + [("5", "train", "ok", "2")])
    with pytest.raises(DataError, match=r"d.tsv:6: label 2 is outside .* 0..1"):
        read_splits(DataConfig(path=path))
    path = write_tsv(tmp_path / "e.tsv", ROWS + [("5", "train", "ok", "pos")])
    with pytest.raises(DataError, match="'pos'.*not an integer"):
        read_splits(DataConfig(path=path))


def test_non_utf8_names_the_line(tmp_path):
    path = tmp_path / "d.tsv"
    write_tsv(path)
    path.write_bytes(path.read_bytes() + b"6\ttrain\tcaf\xe9\t1\n")
    with pytest.raises(DataError, match=r"d.tsv:6: not valid UTF-8"):
        read_splits(DataConfig(path=str(path)))


def test_missing_file_column_and_split(tmp_path):
    with pytest.raises(DataError, match="data file not found"):
        read_splits(DataConfig(path=str(tmp_path / "nope.tsv")))
    path = write_tsv(tmp_path / "d.tsv")
    with pytest.raises(DataError, match="no column 'sentence'"):
        read_splits(DataConfig(path=path, text_column="sentence"))
    with pytest.raises(DataError, match="no rows with split='validation' "
                       r"\(data.validation_split\); rows no split uses: 1 with "
                       r"split='dev' \(first: line 4\)$"):
        read_splits(DataConfig(path=path, validation_split="validation"))
    bad = tmp_path / "ragged.tsv"
    bad.write_text("split\ttext\tlabel\ntrain\tonly two\n")
    with pytest.raises(DataError, match="ragged.tsv:2: 2 fields, header has 3"):
        read_splits(DataConfig(path=str(bad)))


@pytest.mark.slow
def test_tfds_datasets_read_offline_with_mock_data():
    import tensorflow_datasets as tfds

    cfg = DataConfig(path="tfds:glue/sst2", text_column="sentence",
                     split_column=None, train_split="train",
                     validation_split="validation", test_split="validation")
    with tfds.testing.mock_data(num_examples=12):
        splits = read_splits(cfg)
    assert len(splits["train"]) == 12
    assert all(isinstance(t, str) and t for t in splits["train"].texts)
    assert set(np.unique(splits["train"].labels)) <= {0, 1}
    # the label column is a ClassLabel: its names name the classes
    assert splits.label_map.names == ["negative", "positive"]


def test_max_train_examples_is_a_seeded_stratified_sample(tmp_path):
    # Sorted by label, like the bundled movie data: the first rows are one class.
    rows = [(f"text {i}", 0 if i < 80 else 1) for i in range(100)]
    path = tmp_path / "sorted.tsv"
    path.write_text("text\tlabel\tsplit\n" + "".join(
        f"{t}\t{y}\ttrain\n" for t, y in rows) + "a\t0\tdev\nb\t1\ttest\n")
    cfg = DataConfig(path=str(path), max_train_examples=20)
    train = read_splits(cfg, seed=0)["train"]
    assert len(train) == 20
    assert sorted(train.labels.tolist()) == [0] * 16 + [1] * 4  # 80/20 kept
    assert train.texts != [t for t, _ in rows[:20]]  # never the first rows
    assert read_splits(cfg, seed=0)["train"].texts == train.texts  # seeded
    assert read_splits(cfg, seed=1)["train"].texts != train.texts
    order = [int(t.split()[1]) for t in train.texts]
    assert order == sorted(order)  # kept in file order
    # a cap above the split's size keeps every row
    assert len(read_splits(DataConfig(path=str(path), max_train_examples=500))["train"]) == 100


def test_sample_of_float_targets_and_odd_shares():
    ex = Examples([str(i) for i in range(10)], np.linspace(0, 1, 10).astype("float32"))
    assert len(ex.sample(3, seed=0)) == 3
    classes = Examples([str(i) for i in range(7)], np.array([0, 0, 0, 1, 1, 2, 2]))
    picked = classes.sample(4, seed=0).labels.tolist()
    assert len(picked) == 4 and set(picked) == {0, 1, 2}


def test_a_train_split_with_one_class_is_refused(tmp_path):
    path = tmp_path / "one.tsv"
    path.write_text("text\tlabel\tsplit\na\t1\ttrain\nb\t1\ttrain\nc\t0\tdev\nd\t0\ttest\n")
    with pytest.raises(DataError, match="train split.*label 1.*two classes"):
        read_splits(DataConfig(path=str(path)))


def test_rows_of_no_split_used_are_named_in_a_warning(tmp_path):
    """A row whose split value is none of the splits used (a typo such as
    `valid`, or `test` with `data.test_split: null`) is not read, and a
    warning counts such rows by value with the first one's line."""
    rows = [*ROWS, ("5", "valid", "typo split", "1"), ("6", "valid", "again", "0"),
            ("7", "unlabeled", "extra", "1")]
    path = write_tsv(tmp_path / "d.tsv", rows)
    with pytest.warns(UserWarning) as caught:
        splits = read_splits(DataConfig(path=path))
    [message] = [str(w.message) for w in caught]
    assert message == (
        f"{path}: rows in none of the splits used, not read: 2 with "
        "split='valid' (first: line 6); 1 with split='unlabeled' (first: line 8) "
        "(the splits used: data.train_split 'train', data.validation_split "
        "'dev', data.test_split 'test')")
    assert splits["validation"].texts == ["fine film"]
    with pytest.warns(UserWarning, match=r"^\S+: rows in none of the splits used, "
                      r"not read: 1 with split='test' \(first: line 5\); 2 with"):
        shared = read_splits(DataConfig(path=path, test_split="dev"))  # dev as test too
    assert shared["test"].texts == shared["validation"].texts == ["fine film"]
    with pytest.warns(UserWarning, match=r"1 with split='test' \(first: line 5\)"):
        read_splits(DataConfig(path=write_tsv(tmp_path / "e.tsv"), test_split=None))

