"""bench/build_qa_data.py: cloze questions over the movie sentences, and the
bundled file it wrote (data/movie_qa.jsonl) read as a run reads it."""

import json
import os
import random
import re

from conftest import load_bench_script

from kdplug.config.sections import DataConfig
from kdplug.data.readers import read_splits

build = load_bench_script("build_qa_data")
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "data")


def filled(question, context):
    """The words that, put for one "what" of the question, make it a
    sentence of the context."""
    words = []
    for match in re.finditer(r"\bwhat\b", question):
        pattern = (re.escape(question[:match.start()]) + r"(\S+)"
                   + re.escape(question[match.end():]))
        words += re.findall(pattern, context)
    return words


def check_row(row):
    question, context = row["question"], row["context"]
    if row["is_impossible"]:
        assert row["answers"] == {"text": [], "answer_start": []}
        assert filled(question, context) == []  # no sentence of this context
        return
    (word,), (start,) = row["answers"]["text"], row["answers"]["answer_start"]
    assert context[start:start + len(word)] == word
    assert word.isalpha() and len(word) >= 4 and word.lower() not in build.STOP_WORDS
    assert word in filled(question, context)
    assert context.lower().split().count(word.lower()) == 1


def test_split_rows_by_hand():
    frames = [f"The {w} scene was great." for w in ("opening", "closing", "middle")]
    others = ["A long dinner bored us.", "Its chase drags on.", "So final."]
    # contexts of one frame: an unanswerable question from the other context
    # would be answered by any sentence of this one, so none is asked
    rows = build.build_split(frames + frames[::-1], "dev", random.Random(0), 3, 1.0)
    assert rows == []
    rows = build.build_split(frames + others, "dev", random.Random(1), 3, 0.5)
    assert [row["split"] for row in rows] == ["dev", "dev"]
    for row in rows:
        assert len(row["context"].split(". ")) == 3
        check_row(row)
    rows = build.build_split(frames + others, "dev", random.Random(0), 3, 0.0)
    assert not any(row["is_impossible"] for row in rows)


def test_bundled_file_reads_as_extractive_qa():
    rows = [json.loads(line) for line in open(os.path.join(DATA, "movie_qa.jsonl"),
                                               encoding="utf-8")]
    for row in rows[:300]:
        check_row(row)
    cfg = DataConfig(path=os.path.join(DATA, "movie_qa.jsonl"), task="extractive_qa",
                     text_column="question", text_pair_column="context",
                     label_column="answers")
    splits = read_splits(cfg, label_kind="span")
    counts = {name: len(split) for name, split in splits.items()}
    assert counts == {"train": 2828, "validation": 353, "test": 353}
    unanswerable = sum(q.is_impossible for q in splits["train"].labels) / 2828
    assert 0.15 < unanswerable < 0.25
