"""plugins/cmlm_seq2seq/pos_tags.py: POS tagging as generation, built from
tagged sentences (data/movie_tokens.jsonl -> data/pos_tags.tsv)."""

import json
import pathlib

import pytest

from kdplug.errors import DataError
from kdplug_plugins.cmlm_seq2seq.pos_tags import build_rows
from kdplug_plugins.cmlm_seq2seq.pos_tags import main
from kdplug_plugins.cmlm_seq2seq.pos_tags import pos_pair

ROOT = pathlib.Path(__file__).parents[3]


def write_jsonl(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def sentence(id_, split, words, pos, **extra):
    return {"id": id_, "split": split, "words": words, "pos": pos, **extra}


def test_pos_pair_joins_words_and_lower_cased_tags():
    assert pos_pair(["The", "film", "'s", "fine", "."],
                    ["DET", "NOUN", "AUX", "ADJ", "PUNCT"]) == (
        "The film 's fine .", "det noun aux adj punct")


def test_build_keeps_ids_splits_and_order_and_drops_sentences_without_words(tmp_path):
    src = write_jsonl(tmp_path / "tokens.jsonl", [
        sentence("7", "train", ["A", "fine", ",", "fine", "film", "."],
                 ["DET", "ADJ", "PUNCT", "ADJ", "NOUN", "PUNCT"], ner=["O"] * 6),
        "",  # a blank line is skipped
        sentence("8", "dev", [], []),
        sentence(9, "test", ["Dull", "--", "very", "dull"], ["ADJ", "PUNCT", "ADV", "ADJ"]),
    ])
    assert build_rows(str(src)) == [
        ("7", "train", "A fine , fine film .", "det adj punct adj noun punct"),
        ("9", "test", "Dull -- very dull", "adj punct adv adj")]
    out = tmp_path / "pos.tsv"
    assert main([str(src), str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == [
        "id\tsplit\tsource\ttarget",
        "7\ttrain\tA fine , fine film .\tdet adj punct adj noun punct",
        "9\ttest\tDull -- very dull\tadj punct adv adj"]


def test_another_tag_list_can_be_the_target(tmp_path):
    src = write_jsonl(tmp_path / "tokens.jsonl", [
        sentence("1", "train", ["Peter", "Jackson", "directs"], ["PROPN", "PROPN", "VERB"],
                 ner=["B-PERSON", "I-PERSON", "O"])])
    assert build_rows(str(src), tag_key="ner") == [
        ("1", "train", "Peter Jackson directs", "b-person i-person o")]


GOOD = sentence("1", "train", ["a", "film"], ["DET", "NOUN"])


@pytest.mark.parametrize("line, message", [
    ('{"id": "1", "split": "train", "words": ["a"]', r":2: invalid JSON: "),
    ('["a", "film"]', r":2: each line must be a JSON object"),
    (json.dumps({"id": "2", "split": "dev", "words": ["a"]}), r":2: missing field\(s\) 'pos'"),
    (json.dumps(sentence("2", "dev", ["a", "film"], ["DET"])),
     r":2: 2 words but 1 'pos' tags: one tag per word"),
    (json.dumps(sentence("2", "dev", ["a", "fine film"], ["DET", "NOUN"])),
     r":2: field 'words', item 1: expected a non-empty string without whitespace, "
     r"got 'fine film'"),
    (json.dumps(sentence("2", "dev", ["a", ""], ["DET", "NOUN"])),
     r":2: field 'words', item 1: .* got ''"),
    (json.dumps(sentence("2", "dev", ["a", "film"], ["DET", None])),
     r":2: field 'pos', item 1: .* got None"),
    (json.dumps(sentence("2", "dev", "a film", ["DET", "NOUN"])),
     r":2: field 'words': expected a list of strings, got 'a film'"),
    (json.dumps(sentence("2\t3", "dev", ["a"], ["DET"])),
     r":2: field 'id': '2\\t3' holds a tab or a newline"),
    (json.dumps(sentence("2", "", ["a"], ["DET"])),
     r":2: field 'split': expected a non-empty string, got ''"),
])
def test_bad_input_names_the_file_the_line_and_the_field(tmp_path, line, message):
    src = write_jsonl(tmp_path / "tokens.jsonl", [GOOD, line])
    with pytest.raises(DataError, match=message) as info:
        build_rows(str(src))
    assert str(info.value).startswith(f"{src}:2: ")


def test_unreadable_or_empty_input_is_a_data_error(tmp_path, capsys):
    with pytest.raises(DataError, match=r"missing\.jsonl: data file not found \(source\)"):
        build_rows(str(tmp_path / "missing.jsonl"))
    empty = write_jsonl(tmp_path / "empty.jsonl", [sentence("1", "train", [], [])])
    with pytest.raises(DataError, match="empty.jsonl: no sentences with words"):
        build_rows(str(empty))
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(GOOD).encode() + b"\n\xe9\n")
    with pytest.raises(DataError, match=r"latin.jsonl:2: not valid UTF-8"):
        build_rows(str(latin))
    out = tmp_path / "out.tsv"
    assert main([str(empty), str(out)]) == 2
    assert "error: " in capsys.readouterr().err and not out.exists()


def test_the_bundled_file_is_what_the_builder_writes():
    """data/pos_tags.tsv is data/movie_tokens.jsonl rebuilt: every sentence,
    its id and split, one lower-cased tag per word."""
    rows = build_rows(str(ROOT / "data" / "movie_tokens.jsonl"))
    lines = (ROOT / "data" / "pos_tags.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id\tsplit\tsource\ttarget"
    assert lines[1:] == ["\t".join(row) for row in rows] and len(rows) == 10605
    assert [sum(row[1] == s for row in rows) for s in ("train", "dev", "test")] == [
        8484, 1061, 1060]
    assert all(len(row[2].split()) == len(row[3].split()) for row in rows)
