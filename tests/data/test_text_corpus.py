import numpy as np
import pytest

from kdplug.config.sections import DataConfig
from kdplug.data import TextCorpus
from kdplug.errors import DataError

DATA = DataConfig(path="data.tsv")


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_text_file_reads_as_unlabelled_examples(tmp_path):
    path = write(tmp_path / "corpus.txt", "The court ruled.\nPrices rose again.\nIt rained.\n")
    examples = TextCorpus(path, "method.general_corpus").read(DATA)
    assert examples.texts == ["The court ruled.", "Prices rose again.", "It rained."]
    np.testing.assert_array_equal(examples.labels, [-1, -1, -1])
    assert examples.source == path
    first = TextCorpus(path, "method.general_corpus", max_examples=2).read(DATA)
    assert first.texts == ["The court ruled.", "Prices rose again."]


def test_a_table_reads_the_runs_text_column_relative_to_the_config(tmp_path):
    write(tmp_path / "corpus.tsv", "id\tsentence\n1\tA new bridge opened.\n2\tFew came.\n")
    data = DataConfig(path="data.tsv", text_column="sentence")
    examples = TextCorpus("corpus.tsv", "method.general_corpus").read(
        data, resolve_path=lambda p: str(tmp_path / p))
    assert examples.texts == ["A new bridge opened.", "Few came."]


def test_bad_corpora_name_the_file_the_line_and_the_field(tmp_path):
    blank = write(tmp_path / "blank.txt", "one\n\nthree\n")
    with pytest.raises(DataError, match=r"blank\.txt:2: empty line \(method\.general_corpus"):
        TextCorpus(blank, "method.general_corpus").read(DATA)
    with pytest.raises(DataError, match=r"nope\.txt: no such file \(method\.general_corpus\)"):
        TextCorpus(str(tmp_path / "nope.txt"), "method.general_corpus").read(DATA)
    pairs = DataConfig(path="data.tsv", text_pair_column="hypothesis")
    with pytest.raises(DataError, match="holds single texts.*'hypothesis'"):
        TextCorpus(blank, "method.general_corpus").read(pairs)
    with pytest.raises(ValueError, match="max_examples must be >= 1"):
        TextCorpus(blank, "method.general_corpus", max_examples=0)
