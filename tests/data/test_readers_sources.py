"""Every data source `read_splits` reads (issue #17), on tiny data written
here: quoted TSV / CSV, JSONL, Parquet, a saved Hugging Face dataset, data
passed from Python; one file with a split column or one file per split,
with and without a test split."""

import json

import numpy as np
import pytest

from kdplug import ConfigError
from kdplug import DataError
from kdplug.config import DataConfig
from kdplug.config import config_from_dict
from kdplug.data import examples_from_dataset
from kdplug.data import read_rows
from kdplug.data import read_splits

# (split, text, label): what every source below holds.
ROWS = [("train", "a fine film", 1), ("train", "a dull film", 0),
        ("train", "great acting", 1), ("dev", "weak plot", 0),
        ("test", "loved it", 1)]
TRAIN, DEV, TEST = ([t for s, t, _ in ROWS if s == split] for split in ("train", "dev", "test"))


def columns(rows=ROWS):
    return {"split": [s for s, _, _ in rows], "text": [t for _, t, _ in rows],
            "label": [y for _, _, y in rows]}


def assert_read(splits, test=True):
    assert splits["train"].texts == TRAIN
    np.testing.assert_array_equal(splits["train"].labels, [1, 0, 1])
    assert splits["train"].labels.dtype == np.int32
    assert splits["validation"].texts == DEV
    if test:
        assert splits["test"].texts == TEST
    else:
        assert splits["test"] is None


# ------------------------------------------------------------- TSV and CSV
def test_a_quoted_tsv_field_holds_tabs_line_breaks_and_quotes(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text('split\ttext\tlabel\n'
                    'train\t"tab\there"\t1\n'
                    'train\t"two\nlines"\t0\n'
                    'train\t"say ""hi"""\t1\n'
                    'train\tan "inner" quote\t0\n'
                    'dev\tok\t1\n'
                    'test\tfine\t0\n')
    train = read_splits(DataConfig(path=str(path)))["train"]
    assert train.texts == ["tab\there", "two\nlines", 'say "hi"', 'an "inner" quote']
    # a row's number is the line it starts on: the line after a two-line field
    rows = read_rows(str(path))
    assert [line for line, _ in rows] == [2, 3, 5, 6, 7, 8]


def test_quoting_none_reads_quotes_as_text_as_before(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text('split\ttext\tlabel\ntrain\t"half quoted\t1\n')
    with pytest.raises(DataError, match=r"d.tsv:2: .*data.quoting: none"):
        read_rows(str(path))
    assert read_rows(str(path), quoting="none") == [
        (2, {"split": "train", "text": '"half quoted', "label": "1"})]


def test_a_field_count_error_names_the_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('split,text,label\ntrain,"a, b",1\ntrain,a,b,1\n')
    with pytest.raises(DataError, match=r"d.csv:3: 4 fields, header has 3"):
        read_rows(str(path))


def test_csv_with_quoted_commas_and_a_byte_order_mark(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("\ufeffsplit,text,label\n" + "".join(
        f'{s},"{t}, really",{y}\n' for s, t, y in ROWS), encoding="utf-8")
    splits = read_splits(DataConfig(path=str(path)))
    assert splits["train"].texts == [f"{t}, really" for t in TRAIN]


def test_jsonl(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"split": s, "text": t, "label": y}) + "\n"
                            for s, t, y in ROWS))
    assert_read(read_splits(DataConfig(path=str(path))))


# ------------------------------------------------------------- one file per split
def write_split_files(folder, splits=("train", "dev", "test"), ext="csv"):
    paths = {}
    for split in splits:
        path = folder / f"{split}.{ext}"
        path.write_text("text,label\n" + "".join(
            f"{t},{y}\n" for s, t, y in ROWS if s == split))
        paths[split] = str(path)
    return paths


def test_one_file_per_split_with_and_without_test(tmp_path):
    paths = write_split_files(tmp_path)
    assert_read(read_splits(DataConfig(**paths)))
    del paths["test"]
    assert_read(read_splits(DataConfig(**paths)), test=False)


def test_one_file_per_split_from_a_config_relative_paths_and_validation(tmp_path):
    write_split_files(tmp_path)
    doc = {"name": "x", "teacher": {"source": "t"}, "method": {"name": "kd"},
           "data": {"train": "train.csv", "validation": "dev.csv"}}
    config = config_from_dict(doc, file=str(tmp_path / "x.yaml"))
    assert config.data.dev == "dev.csv" and not config.data.has_test
    assert_read(read_splits(config.data, config.resolve_path), test=False)
    doc["data"]["dev"] = "dev.csv"
    with pytest.raises(ConfigError, match="data.dev and data.validation"):
        config_from_dict(doc, file=str(tmp_path / "x.yaml"))


@pytest.mark.parametrize("data, message", [
    ({"path": "d.tsv", "train": "t.tsv"}, "both path and train"),
    ({"path": "d.tsv", "test": "t.tsv"}, "both path and test"),
    ({"dev": "d.tsv"}, "train is not"),
    ({}, "no data"),
    ({"train": "tfds:glue/sst2"}, "TFDS dataset goes in path"),
])
def test_exactly_one_form_of_sources(data, message):
    with pytest.raises(ValueError, match=message):
        DataConfig(**data)


def test_a_missing_split_file_names_its_key(tmp_path):
    paths = write_split_files(tmp_path, ("train",))
    with pytest.raises(DataError, match=r"dev.csv: data file not found \(data.dev\)"):
        read_splits(DataConfig(train=paths["train"], dev=str(tmp_path / "dev.csv")))


def test_a_test_split_is_optional_in_one_file(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text("split\ttext\tlabel\n" + "".join(
        f"{s}\t{t}\t{y}\n" for s, t, y in ROWS if s != "test"))
    with pytest.raises(DataError, match="test_split: null"):
        read_splits(DataConfig(path=str(path)))
    assert_read(read_splits(DataConfig(path=str(path), test_split=None)), test=False)


# ------------------------------------------------------------- Parquet
def test_parquet_one_file_and_per_split(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns()), tmp_path / "d.parquet")
    assert_read(read_splits(DataConfig(path=str(tmp_path / "d.parquet"))))
    for split in ("train", "dev"):
        part = [r for r in ROWS if r[0] == split]
        pq.write_table(pa.table(columns(part)), tmp_path / f"{split}.pq")
    splits = read_splits(DataConfig(train=str(tmp_path / "train.pq"),
                                    dev=str(tmp_path / "dev.pq")))
    assert_read(splits, test=False)
    with pytest.raises(DataError, match=r"d.parquet: no column 'sentence' "
                                        r"\(data.text_column\); columns are"):
        read_splits(DataConfig(path=str(tmp_path / "d.parquet"), text_column="sentence"))


def test_without_pyarrow_the_error_names_the_extra(tmp_path, monkeypatch):
    import sys

    (tmp_path / "d.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(DataError, match=r"kdplug\[parquet\]"):
        read_splits(DataConfig(path=str(tmp_path / "d.parquet")))


# ------------------------------------------------------------- Hugging Face datasets
def test_a_saved_dataset_dict_its_splits_and_class_names(tmp_path):
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"text": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["neg", "pos"])})
    parts = {name: datasets.Dataset.from_dict(
        {k: v for k, v in columns([r for r in ROWS if r[0] == split]).items()
         if k != "split"}, features=features)
        for name, split in (("train", "train"), ("validation", "dev"))}
    datasets.DatasetDict(parts).save_to_disk(str(tmp_path / "hf"))
    cfg = DataConfig(path=str(tmp_path / "hf"), validation_split="validation",
                     test_split=None)
    splits = read_splits(cfg)
    assert_read(splits, test=False)
    assert splits.label_map.names == ["neg", "pos"]  # from the ClassLabel
    with pytest.raises(DataError, match=r"no split 'dev' \(data.validation_split\); "
                                        r"its splits are \['train', 'validation'\]"):
        read_splits(DataConfig(path=str(tmp_path / "hf"), test_split=None))
    with pytest.raises(DataError, match=r"no column 'sentence' \(data.text_column\)"):
        read_splits(DataConfig(path=str(tmp_path / "hf"), text_column="sentence",
                               validation_split="validation", test_split=None))


def test_a_saved_dataset_with_a_split_column_and_per_split(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict(columns()).save_to_disk(str(tmp_path / "all"))
    assert_read(read_splits(DataConfig(path=str(tmp_path / "all"))))
    datasets.Dataset.from_dict(columns(ROWS[:3])).save_to_disk(str(tmp_path / "train"))
    splits = read_splits(DataConfig(train=str(tmp_path / "train"),
                                    dev=str(tmp_path / "all"), test=str(tmp_path / "all")))
    assert splits["train"].texts == TRAIN and len(splits["validation"]) == len(ROWS)


def test_without_datasets_the_error_names_the_extra(tmp_path, monkeypatch):
    import sys

    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "dataset_dict.json").write_text('{"splits": ["train"]}')
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DataError, match=r"hf: reading a saved Hugging Face dataset "
                                        r"\(data.path\) needs .*kdplug\[datasets\]"):
        read_splits(DataConfig(path=str(folder)))


def test_data_from_python_dict_of_splits_columns_and_a_dataset_dict():
    by_split = {split: {k: v for k, v in columns([r for r in ROWS if r[0] == split]).items()
                        if k != "split"} for split in ("train", "dev", "test")}
    assert_read(examples_from_dataset(by_split))
    assert_read(examples_from_dataset(columns()))  # one table, a split column
    rows = [{"text": t, "label": y, "split": s} for s, t, y in ROWS]
    assert_read(examples_from_dataset(rows))
    with pytest.raises(DataError, match=r"<in memory> \[train\], row 2: empty text"):
        examples_from_dataset({"train": {"text": ["a", " "], "label": [0, 1]}},
                              validation_split=None, test_split=None)
    with pytest.raises(DataError, match=r"^<in memory>: no rows \(an empty list\)$"):
        examples_from_dataset([])
    with pytest.raises(DataError, match="^<in memory>: no rows: train, dev, test are "
                                        r"all empty \(as splits or as columns\)$"):
        examples_from_dataset({"train": [], "dev": [], "test": []})
    pd = pytest.importorskip("pandas")
    assert_read(examples_from_dataset(pd.DataFrame(columns())))
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict({k: datasets.Dataset.from_dict(v) for k, v in by_split.items()})
    assert_read(examples_from_dataset(dd))


def test_new_fields_at_their_defaults_leave_cache_keys_and_settings_as_before():
    """The teacher cache key and a run folder's settings hash `key_fields()`:
    a config that sets none of the #17 fields hashes what it hashed before."""
    assert set(DataConfig(path="d.tsv").key_fields()) == {
        "path", "format", "text_column", "text_pair_column", "label_column",
        "split_column", "train_split", "validation_split", "test_split",
        "num_classes", "sequence_length", "max_train_examples", "bad_rows"}
    assert DataConfig(path="d.tsv", quoting="none").key_fields()["quoting"] == "none"
    assert DataConfig(train="t.tsv").key_fields()["train"] == "t.tsv"
