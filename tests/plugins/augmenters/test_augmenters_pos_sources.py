"""POS sources: WordNet files (a tiny fake database), lexicon, factory."""

import pytest

from kdplug.errors import DataError
from kdplug.errors import KdplugError
from kdplug_plugins.augmenters import pos_source as pos_source_mod
from kdplug_plugins.augmenters.lexicon_pos import LexiconPOS
from kdplug_plugins.augmenters.pos_source import find_wordnet
from kdplug_plugins.augmenters.pos_source import make_pos_source
from kdplug_plugins.augmenters.pos_unigrams import POSUnigrams
from kdplug_plugins.augmenters.wordnet_pos import WordNetPOS

LICENCE = "  1 This software and database is being provided to you, the LICENSEE\n"
# lemma pos synset_cnt p_cnt [ptr...] sense_cnt tagsense_cnt offsets...
INDEX = {
    "noun": [
        "film n 2 2 @ ~ 2 5 01 02",
        "run n 3 1 @ 3 2 03 04 05",
        "child n 1 1 @ 1 9 06",
        "ice_cream n 1 1 @ 1 3 07",
        "good n 1 1 @ 1 1 08",
        "a n 1 1 @ 1 0 09",
    ],
    "verb": [
        "film v 1 1 @ 1 1 10",
        "run v 5 2 @ ~ 5 30 11 12 13 14 15",
        "hate v 1 1 @ 1 1 16",
        "stop v 1 1 @ 1 4 17",
    ],
    "adj": [
        "good a 4 1 & 4 40 18 19 20 21",
        "hated a 1 1 & 1 1 22",
        "big a 1 1 & 1 3 23",
    ],
    "adv": ["quickly r 1 1 \\ 1 2 24"],
}
EXC = {
    "noun": ["children child"],
    "verb": ["ran run", "running run", "stopped stop"],
    "adj": ["better good", "bigger big"],
    "adv": [],
}


@pytest.fixture
def wordnet_dir(tmp_path):
    for name, lines in INDEX.items():
        (tmp_path / f"index.{name}").write_text(LICENCE + "\n".join(lines) + "\n")
    for name, lines in EXC.items():
        (tmp_path / f"{name}.exc").write_text("".join(f"{x}\n" for x in lines))
    return str(tmp_path)


def test_wordnet_classes_are_pos_plus_inflection(wordnet_dir):
    pos = WordNetPOS(wordnet_dir)
    expected = {
        "film": "n",        # noun 1 + 5 tagged senses beats verb 1 + 1
        "films": "n-pl",    # detachment rule -s
        "Films": "n-pl",    # case-insensitive
        "filmed": "v-ed",   # only a verb reading
        "run": "v",         # verb 31 beats noun 3
        "runs": "v-s",
        "ran": "v-irr",     # exception list
        "running": "v-ing", # exception list with an -ing ending
        "stopped": "v-ed",
        "children": "n-pl",
        "better": "a-er",
        "bigger": "a-er",
        "biggest": "=biggest",  # no rule gives "big" from "-gest"
        "good": "a",
        "hated": "v-ed",    # a tie (adj 2, verb 2) goes to the verb
        "quickly": "r",
        "a": "det",         # closed class before WordNet's noun "a"
        "the": "det",
        "42": "num",
        "ice_cream": "=ice_cream",  # multi-word lemmas are skipped
        "zorp": "=zorp",
    }
    assert {w: pos.tag(w) for w in expected} == expected


def test_overrides_and_errors(wordnet_dir, tmp_path):
    assert WordNetPOS(wordnet_dir, overrides={"Film": "x"}).tag("film") == "x"
    with pytest.raises(KdplugError, match="not a WordNet database"):
        WordNetPOS(str(tmp_path / "nowhere"))


def test_lexicon_source_and_file(tmp_path):
    pos = LexiconPOS({"Movie": "n", "the": "mine"})
    assert [pos.tag(w) for w in ("movie", "the", "of", "kindness", "kindnesses",
                                 "slowly", "dangerous", "walking", "7", "xyz")] == [
        "n", "mine", "prep", "n", "n-pl", "r", "a", "v-ing", "num", "=xyz"]
    assert LexiconPOS(guess_suffixes=False).tag("slowly") == "=slowly"
    path = tmp_path / "lex.tsv"
    path.write_text("# word<TAB>tag\nFilm\tn\n\nplot n\n")
    assert LexiconPOS.read(str(path)) == {"film": "n", "plot": "n"}
    path.write_text("film n extra\n")
    with pytest.raises(DataError, match="lex.tsv:1"):
        LexiconPOS.read(str(path))
    with pytest.raises(DataError, match="not found"):
        LexiconPOS.read(str(tmp_path / "missing.tsv"))


def test_factory(wordnet_dir, tmp_path, monkeypatch):
    lexicon = tmp_path / "lex.tsv"
    lexicon.write_text("film\tx\n")
    wn = make_pos_source("wordnet", wordnet_dir=wordnet_dir, lexicon=str(lexicon))
    assert isinstance(wn, WordNetPOS) and wn.tag("film") == "x" and wn.tag("runs") == "v-s"
    assert isinstance(make_pos_source("lexicon"), LexiconPOS)
    monkeypatch.setenv("WNSEARCHDIR", wordnet_dir)
    assert find_wordnet() == wordnet_dir
    assert isinstance(make_pos_source("auto"), WordNetPOS)
    # Nothing installed anywhere: auto falls back (with a warning), wordnet fails.
    monkeypatch.delenv("WNSEARCHDIR")
    monkeypatch.setattr(pos_source_mod, "WORDNET_DIRS", (str(tmp_path / "none"),))
    assert find_wordnet() is None
    with pytest.warns(UserWarning, match="wordnet-base"):
        assert isinstance(make_pos_source("auto"), LexiconPOS)
    with pytest.raises(KdplugError, match="apt-get install wordnet-base"):
        make_pos_source("wordnet")
    with pytest.raises(KdplugError, match="unknown pos_source"):
        make_pos_source("spacy")


def test_sampling_excludes_the_word_and_handles_singletons():
    import numpy as np

    unigrams = POSUnigrams(LexiconPOS({"film": "n", "plot": "n", "odd": "a"}))
    unigrams.fit(["film film film plot", "odd"])
    g = np.random.default_rng(0)
    assert {unigrams.sample("film", g) for _ in range(20)} == {"plot"}
    assert {unigrams.sample("PLOT", g) for _ in range(20)} == {"film"}
    assert unigrams.sample("odd", g) is None       # alone in its class
    assert unigrams.sample("unseen", g) is None    # class not in the corpus


@pytest.mark.skipif(find_wordnet() is None, reason="WordNet not installed")
def test_installed_wordnet_if_any():
    pos = make_pos_source("wordnet")
    assert [pos.tag(w) for w in ("movies", "acting", "quickly", "the", "better")] == [
        "n-pl", "v-ing", "r", "det", "a-er"]
