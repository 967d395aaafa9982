import dataclasses

import pytest

from kdplug.config.sections import DataConfig
from kdplug.errors import DataError
from kdplug_plugins.cmlm_seq2seq.seq2seq_data import Seq2SeqData

from cmlm_helpers import write_pairs


def test_read_splits_columns_and_subsample(tmp_path):
    data = DataConfig(path=write_pairs(tmp_path / "pairs.tsv", 40))
    pairs = Seq2SeqData.read(data, "source", "target")
    train_sources, train_targets = pairs.splits["train"]
    assert (len(train_sources), len(pairs.splits["validation"][0]),
            len(pairs.splits["test"][0])) == (28, 6, 6)
    assert train_targets[0].split() == train_sources[0].split()[::-1]
    small = Seq2SeqData.read(dataclasses.replace(data, max_train_examples=5),
                             "source", "target", seed=1)
    assert len(small.splits["train"][0]) == 5
    assert set(small.splits["train"][0]) <= set(train_sources)
    no_dev = Seq2SeqData.read(dataclasses.replace(data, validation_split=None),
                              "source", "target")
    assert no_dev.splits["validation"] is None
    with pytest.raises(DataError, match="no column 'summary'"):
        Seq2SeqData.read(data, "source", "summary")
    with pytest.raises(DataError, match="TFDS"):
        Seq2SeqData.read(DataConfig(path="tfds:glue/sst2"), "source", "target")


def test_bad_rows_error_or_skip(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("split\tsource\ttarget\ntrain\ta b\tb a\ntrain\t \tx\ntest\tc d\td c\n")
    with pytest.raises(DataError, match=r"bad.tsv:3: empty text in column 'source'"):
        Seq2SeqData.read(DataConfig(path=str(path), validation_split=None),
                         "source", "target")
    data = Seq2SeqData.read(DataConfig(path=str(path), validation_split=None,
                                       bad_rows="skip"), "source", "target")
    assert data.splits["train"] == (["a b"], ["b a"]) and data.skipped == 1


def test_python_pairs_round_trip_through_a_tsv(tmp_path):
    data = Seq2SeqData.from_pairs(train=[("a b", "B, a."), ("c", "C!")],
                                  validation=[("d", "D.")], test=[("e f", "E f?")])
    data.to_tsv(str(tmp_path / "pairs.tsv"))
    again = Seq2SeqData.read(DataConfig(path=str(tmp_path / "pairs.tsv")),
                             "source", "target")
    assert again.splits == data.splits
    with pytest.raises(DataError, match="test split has no"):
        Seq2SeqData.from_pairs(train=[("a", "b")], test=[])
    with pytest.raises(DataError, match="tab or a line break"):
        Seq2SeqData.from_pairs(train=[("a\tb", "c")], test=[("a", "b")]).to_tsv(
            str(tmp_path / "x.tsv"))


@pytest.mark.skipif(not hasattr(DataConfig, "SPLIT_FILES"),
                    reason="this kdplug's data: section has no per-split files")
def test_one_file_per_split(tmp_path):
    for split, rows in (("train", "a b\tb a\nc\tc\n"), ("test", "d e\te d\n")):
        (tmp_path / f"{split}.tsv").write_text(f"source\ttarget\n{rows}")
    data = DataConfig(train=str(tmp_path / "train.tsv"), test=str(tmp_path / "test.tsv"))
    pairs = Seq2SeqData.read(data, "source", "target")
    assert pairs.splits == {"train": (["a b", "c"], ["b a", "c"]), "validation": None,
                            "test": (["d e"], ["e d"])}


PAIRS = {"source": ["a b", "c d", "e f", "g h"], "target": ["b a", "d c", "f e", "h g"],
         "split": ["train", "train", "dev", "test"]}


def test_parquet_and_saved_hugging_face_datasets(tmp_path):
    """Every format kdplug reads (issue #19): a Parquet file and a saved
    `Dataset` split by `data.split_column`, a saved `DatasetDict` by name."""
    pa = pytest.importorskip("pyarrow")
    datasets = pytest.importorskip("datasets")
    import pyarrow.parquet as pq

    want = {"train": (["a b", "c d"], ["b a", "d c"]), "validation": (["e f"], ["f e"]),
            "test": (["g h"], ["h g"])}
    pq.write_table(pa.table(PAIRS), tmp_path / "pairs.parquet")
    parquet = Seq2SeqData.read(DataConfig(path=str(tmp_path / "pairs.parquet")),
                               "source", "target")
    assert parquet.splits == want
    datasets.Dataset.from_dict(PAIRS).save_to_disk(str(tmp_path / "one"))
    assert Seq2SeqData.read(DataConfig(path=str(tmp_path / "one")),
                            "source", "target").splits == want
    by_name = {name: [i for i, s in enumerate(PAIRS["split"]) if s == name]
               for name in ("train", "dev", "test")}
    datasets.DatasetDict({name: datasets.Dataset.from_dict(
        {k: [PAIRS[k][i] for i in rows] for k in ("source", "target")})
        for name, rows in by_name.items()}).save_to_disk(str(tmp_path / "dict"))
    assert Seq2SeqData.read(DataConfig(path=str(tmp_path / "dict")),
                            "source", "target").splits == want
    with pytest.raises(DataError, match=r"no split 'validation' \(data.validation_split\)"
                                        r"; its splits are \['dev', 'test', 'train'\]"):
        Seq2SeqData.read(DataConfig(path=str(tmp_path / "dict"), validation_split="validation"),
                         "source", "target")
    with pytest.raises(DataError, match=r"pairs.parquet: no column 'summary' "
                                        r"\(method.target_column\)"):
        Seq2SeqData.read(DataConfig(path=str(tmp_path / "pairs.parquet")), "source", "summary")
