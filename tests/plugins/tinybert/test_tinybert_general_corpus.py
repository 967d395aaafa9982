import io
import os
import tarfile

import pytest

from kdplug.config.sections import DataConfig
from kdplug.data import TextCorpus
from kdplug_plugins.tinybert.general_corpus import INNER_ARCHIVE
from kdplug_plugins.tinybert.general_corpus import corpus_lines
from kdplug_plugins.tinybert.general_corpus import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def tar_bytes(files):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def fake_sdist(path, news, reviews):
    inner = tar_bytes({
        "hutto_ICWSM_2014/nytEditorialSnippets_GroundTruth.txt": news.encode(),
        "hutto_ICWSM_2014/amazonReviewSnippets_GroundTruth.txt": reviews.encode(),
        "hutto_ICWSM_2014/tweets_GroundTruth.txt": b"1\t1.0\tnot this one\r\n"})
    path.write_bytes(tar_bytes({f"vaderSentiment-3.3.2/{INNER_ARCHIVE}": inner}))
    return str(path)


def test_corpus_lines_keep_the_text_column_once_in_order():
    assert corpus_lines(["1_1\t0.4\t  The  court ruled.\r\n", "1_2\t0.1\t \r\n",
                         "1_3\t0.2\tThe court ruled.", "bad line", "2_1\t-1\tIt broke."]) == [
        "The court ruled.", "It broke."]


def test_builds_news_then_reviews_from_the_sdist(tmp_path):
    sdist = fake_sdist(tmp_path / "vader.tar.gz",
                       "1_1\t0.4\tPrices rose.\r\n1_2\t0\tPrices rose.\r\n",
                       "1_1\t2.0\tGreat battery life.\r\n")
    out = tmp_path / "corpus.txt"
    assert main([sdist, str(out)]) == 0
    assert out.read_text().splitlines() == ["Prices rose.", "Great battery life."]
    empty = tmp_path / "other.tar.gz"
    empty.write_bytes(tar_bytes({"x/README": b"nothing"}))
    with pytest.raises(SystemExit, match="no additional_resources/hutto_ICWSM_2014"):
        main([str(empty), str(out)])


def test_the_shipped_corpus_reads_as_unlabelled_texts():
    path = os.path.join(ROOT, "data", "general_english.txt")
    examples = TextCorpus(path, "method.general_corpus").read(DataConfig(path="d.tsv"))
    assert len(examples) == 8816 == len(set(examples.texts))
    assert (examples.labels == -1).all()
    assert examples.texts[0].startswith("On Dec. 19, around noon, New York City's")
