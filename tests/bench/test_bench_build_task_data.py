"""bench/build_task_data.py: the silver token and entity data, and the
bundled files it wrote (data/movie_tokens.jsonl, data/movie_entities.jsonl)."""

import json
import os

import pytest
from conftest import load_bench_script

build = load_bench_script("build_task_data")
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "data")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def check_bio(tags):
    for previous, tag in zip(["O"] + tags, tags):
        assert tag == "O" or tag[:2] in ("B-", "I-"), tag
        if tag.startswith("I-"):
            assert previous[2:] == tag[2:], (previous, tag)


def test_bundled_files_match_the_snippets():
    snippets = build.read_snippets(os.path.join(DATA, "movie_snippets.tsv"))
    tokens = read_jsonl(os.path.join(DATA, "movie_tokens.jsonl"))
    entities = read_jsonl(os.path.join(DATA, "movie_entities.jsonl"))
    assert [(r["id"], r["split"]) for r in snippets] == [
        (r["id"], r["split"]) for r in tokens] == [
        (r["id"], r["split"]) for r in entities]
    assert [r["text"] for r in snippets] == [r["text"] for r in entities]
    kept = set()
    for tok, ent in zip(tokens, entities):
        assert tok["words"] and len(tok["words"]) == len(tok["pos"]) == len(tok["ner"])
        check_bio(tok["ner"])
        types = {t[2:] for t in tok["ner"] if t != "O"}
        assert ent["labels"] == sorted(set(ent["labels"]))
        assert set(ent["labels"]) <= types
        kept |= set(ent["labels"])
    assert len(kept) == 6


def test_tags_a_few_sentences_with_spacy(tmp_path):
    pytest.importorskip("spacy")
    try:
        build.load_pipeline()
    except OSError:
        pytest.skip("no English spaCy pipeline installed")
    tsv = tmp_path / "snippets.tsv"
    tsv.write_text(
        "id\tsplit\tscore\tlabel\ttext\n"
        "1\ttrain\t1.0\t1\tSteven Spielberg made a film in Paris  in 1990.\n"
        "2\ttrain\t-1.0\t0\tIt is dull.\n"
        "3\ttest\t2.0\t1\tTom Hanks is great.\n", encoding="utf-8")
    build.main(["--input", str(tsv), "--out-dir", str(tmp_path), "--top-types", "2"])
    tokens = read_jsonl(tmp_path / "movie_tokens.jsonl")
    entities = read_jsonl(tmp_path / "movie_entities.jsonl")
    first = tokens[0]
    assert "" not in first["words"] and " " not in first["words"]  # double space dropped
    assert first["words"][:2] == ["Steven", "Spielberg"]
    assert first["ner"][:2] == ["B-PERSON", "I-PERSON"]
    assert first["pos"][:2] == ["PROPN", "PROPN"]
    assert tokens[1]["ner"] == ["O"] * 4
    assert [r["split"] for r in entities] == ["train", "train", "test"]
    assert entities[1]["labels"] == []
    # one training sentence each for PERSON, GPE and DATE (the test split's
    # PERSON does not count): the two kept are the first by name
    assert entities[0]["labels"] == ["DATE", "GPE"]
    assert entities[2]["labels"] == []
    card = (tmp_path / "movie_entities.md").read_text(encoding="utf-8")
    assert "silver" in card and "MIT" in card
    assert "silver" in (tmp_path / "movie_tokens.md").read_text(encoding="utf-8")
