import collections
import subprocess
import sys

import numpy as np
import pytest

from kdplug.analysis.probing import BUILDERS
from kdplug.analysis.probing import SURFACE_TASKS
from kdplug.analysis.probing import SYNTACTIC_TASKS
from kdplug.analysis.probing import BigramShift
from kdplug.analysis.probing import CoordinationInversion
from kdplug.analysis.probing import ObjectNumber
from kdplug.analysis.probing import ParsedSentence
from kdplug.analysis.probing import ParsedToken
from kdplug.analysis.probing import SentenceLength
from kdplug.analysis.probing import SubjectNumber
from kdplug.analysis.probing import Tense
from kdplug.analysis.probing import TopConstituents
from kdplug.analysis.probing import TreeDepth
from kdplug.analysis.probing import WordContent
from kdplug.analysis.probing import build_probing_task
from kdplug.analysis.probing import build_probing_tasks
from kdplug.analysis.probing import load_spacy_parser
from kdplug.analysis.probing import tokenize_words
from kdplug.analysis.probing.builders import clean_sentences
from kdplug.analysis.probing.syntactic import clause_spans
from kdplug.errors import ConfigError
from kdplug.errors import DataError
from kdplug.errors import KdplugError


def parse(*tokens):
    """A ParsedSentence from `(text, pos, dep, head, "Feat=Val|...")` tuples."""
    out = []
    for text, pos, dep, head, *morph in tokens:
        feats = dict(f.split("=") for f in morph[0].split("|")) if morph and morph[0] else {}
        out.append(ParsedToken(text, pos, "", dep, head, feats))
    return ParsedSentence(" ".join(t.text for t in out), tuple(out))


PAST, PRES = "Tense=Past|VerbForm=Fin", "Tense=Pres|VerbForm=Fin"
SING, PLUR = "Number=Sing", "Number=Plur"

DOGS = parse(("The", "DET", "det", 1), ("dogs", "NOUN", "nsubj", 2, PLUR),
             ("barked", "VERB", "ROOT", 2, PAST), ("loudly", "ADV", "advmod", 2),
             (".", "PUNCT", "punct", 2))
EATEN = parse(("He", "PRON", "nsubj", 2, SING),
              ("has", "AUX", "aux", 2, PRES),
              ("eaten", "VERB", "ROOT", 2, "Tense=Past|VerbForm=Part"),
              ("the", "DET", "det", 4), ("apples", "NOUN", "dobj", 2, PLUR),
              (".", "PUNCT", "punct", 2))
MAN = parse(("The", "DET", "det", 1), ("man", "NOUN", "nsubj", 5, SING),
            ("who", "PRON", "dobj", 4), ("I", "PRON", "nsubj", 4, SING),
            ("saw", "VERB", "relcl", 1, PAST),
            ("eats", "VERB", "ROOT", 5, PRES + "|Number=Sing"),
            ("an", "DET", "det", 7), ("apple", "NOUN", "dobj", 5, SING),
            (".", "PUNCT", "punct", 5))
WILL = parse(("Will", "AUX", "aux", 1, "VerbForm=Fin"),
             ("go", "VERB", "ROOT", 1, "VerbForm=Inf"), (".", "PUNCT", "punct", 1))
CATS = parse(("Cats", "NOUN", "nsubj", 1, PLUR), ("eat", "VERB", "ROOT", 1, PRES),
             ("fish", "NOUN", "dobj", 1, PLUR), (".", "PUNCT", "punct", 1))
# coordinated clauses: spaCy attaches the cc to the first verb ...
CAME = parse(("I", "PRON", "nsubj", 1, SING), ("came", "VERB", "ROOT", 1, PAST),
             (",", "PUNCT", "punct", 1), ("and", "CCONJ", "cc", 1),
             ("she", "PRON", "nsubj", 5, SING), ("left", "VERB", "conj", 1, PAST),
             (".", "PUNCT", "punct", 5))
BARKED = parse(("The", "DET", "det", 1), ("dog", "NOUN", "nsubj", 2, SING),
               ("barked", "VERB", "ROOT", 2, PAST), ("but", "CCONJ", "cc", 2),
               ("the", "DET", "det", 5), ("cat", "NOUN", "nsubj", 6, SING),
               ("slept", "VERB", "conj", 2, PAST), (".", "PUNCT", "punct", 6))
# ... Universal Dependencies to the second
SINGS = parse(("Ann", "PROPN", "nsubj", 1, SING), ("sings", "VERB", "ROOT", 1, PRES),
              ("and", "CCONJ", "cc", 4), ("Bob", "PROPN", "nsubj", 4, SING),
              ("dances", "VERB", "conj", 1, PRES), (".", "PUNCT", "punct", 1))
# a shared subject: one clause with two verbs, not two clauses
CAME_AND_LEFT = parse(("She", "PRON", "nsubj", 1, SING), ("came", "VERB", "ROOT", 1, PAST),
                      ("and", "CCONJ", "cc", 1), ("left", "VERB", "conj", 1, PAST),
                      (".", "PUNCT", "punct", 1))

PARSES = [DOGS, EATEN, MAN, WILL, CATS, CAME, BARKED, SINGS, CAME_AND_LEFT]


def texts_of(parses):
    return [p.text for p in parses]


def labels_by_text(texts, labels):
    return dict(zip(texts, labels))


# -- parses -------------------------------------------------------------------

def test_parsed_sentence_tree_helpers():
    assert MAN.root() == 5
    assert MAN.children(5) == [1, 7, 8]
    assert MAN.children(4) == [2, 3]
    assert MAN.subtree(1) == [0, 1, 2, 3, 4]
    # eats -> man -> saw -> who: 4 tokens on the longest path
    assert MAN.depth() == 4
    assert DOGS.depth() == 3  # barked -> dogs -> The
    assert WILL.depth() == 2
    alone = parse(("Yes", "INTJ", "ROOT", 0))
    assert alone.depth() == 1
    two = parse(("Go", "VERB", "ROOT", 0), ("Now", "ADV", "ROOT", 1),
                ("then", "ADV", "advmod", 1))
    assert two.roots() == [0, 1] and two.root() == 0 and two.depth() == 2
    with pytest.raises(ValueError, match="head 5"):
        parse(("a", "X", "dep", 5))
    with pytest.raises(ValueError, match="cycle"):
        parse(("a", "X", "ROOT", 0), ("b", "X", "dep", 2), ("c", "X", "dep", 1)).depth()


# -- surface tasks --------------------------------------------------------------

def test_tokenisation_and_sentence_length_bins():
    assert tokenize_words("It's a well-made film, isn't it?") == [
        "It's", "a", "well-made", "film", ",", "isn't", "it", "?"]
    sentences = [
        "Hi.",                                        # 1 word
        "It's a well-made film, isn't it?",           # 6 words
        "One two three four five six seven eight.",   # 8
        " ".join(["word"] * 13) + " !",               # 13
        " ".join(["w"] * 22) + ", " + "w " * 6,       # 28
        " ".join(["w"] * 29),                         # 29
        "... !",                                      # no words: no bin
    ]
    texts, labels = SentenceLength().examples(sentences, None)
    assert labels == ["1-8", "1-8", "1-8", "13-16", "26+", "26+"]
    assert texts == sentences[:6]
    texts, labels = SentenceLength(bins=((2, 6), (8, 8))).examples(sentences, None)
    assert labels == ["2-6", "8-8"] and texts == sentences[1:3]
    with pytest.raises(ValueError, match="overlapping"):
        SentenceLength(bins=((1, 5), (5, 9)))
    with pytest.raises(ValueError, match="only the last bin"):
        SentenceLength(bins=((1, None), (5, 9)))


def test_word_content_chooses_from_the_corpus_ranking():
    sentences = [
        "The cat sleeps.",           # cat
        "The cat eats.",             # cat
        "The dog eats.",             # dog
        "The dog runs.",             # dog
        "The cat and the dog.",      # two chosen words: dropped
        "A bird sings.",             # none
        "The cat, the cat!",         # cat twice: dropped
        "The fox runs.",             # none
    ]
    # sentences containing: the 7, cat 4, dog 3, eats 2, runs 2, the rest 1;
    # skip "the", candidates need 2 sentences: cat, dog, eats, runs -> cat, dog
    builder = WordContent(num_words=2, skip_top=1, min_sentences=2)
    assert builder.choose_words(sentences) == ["cat", "dog"]
    texts, labels = builder.examples(sentences, None)
    assert texts == sentences[:4]
    assert labels == ["cat", "cat", "dog", "dog"]


def test_word_content_replaces_words_left_with_too_few_sentences():
    sentences = [
        "a red apple",
        "it is a red apple",
        "Red is it",        # case-insensitive
        "a red one",
        "a blue sky",
        "it is blue",
        "red red red",      # red three times: dropped
    ]
    # ranking: red 5, apple 2, blue 2 (alphabetical tie), one 1, sky 1.
    # [red, apple]: every apple sentence also has red -> apple has 0 kept
    # sentences and is replaced by blue.
    builder = WordContent(num_words=2, skip_top=0, min_sentences=2)
    assert builder.choose_words(sentences) == ["blue", "red"]
    texts, labels = builder.examples(sentences, None)
    assert labels == ["red", "red", "red", "red", "blue", "blue"]
    assert texts == sentences[:6]
    texts, labels = builder.build(sentences, np.random.default_rng(0))
    assert sorted(collections.Counter(labels).items()) == [("blue", 2), ("red", 2)]


def test_bigram_shift_swaps_words_and_joins_both_classes_with_spaces():
    rng = np.random.default_rng(2)  # first draws: random() 0.26 < 0.5, integers(4) 0
    assert BigramShift().examples(["The cat sat on the mat."], rng) == (
        ["The sat cat on the mat ."], ["I"])
    # one swappable position each (the first word never moves, no punctuation,
    # no identical pair): the swap is known whatever the draw
    nouns = [f"thing{i}" for i in range(60)]
    sentences = [f"Go, go, go {n}." for n in nouns]
    sentences += ["Too short.", "The the the the.", "Hello world, hi, hi."]
    texts, labels = BigramShift().examples(sentences, np.random.default_rng(0))
    assert len(texts) == 60  # the last three have no swap position
    for text, label, noun in zip(texts, labels, nouns):
        original, swapped = f"Go , go , go {noun} .", f"Go , go , {noun} go ."
        assert text == (swapped if label == "I" else original)
    assert 20 <= labels.count("I") <= 40
    # balanced after build, and no text with both labels
    texts, labels = BigramShift().build(sentences, np.random.default_rng(0))
    assert labels.count("I") == labels.count("O")
    assert len(set(texts)) == len(texts)


# -- syntactic tasks --------------------------------------------------------------

def test_tree_depth_labels():
    builder = TreeDepth(min_depth=3, max_depth=4, min_class_size=1)
    texts, labels = builder.examples(texts_of(PARSES), None, PARSES)
    # depths: DOGS 3, EATEN 3 (eaten -> apples -> the), MAN 4, WILL 2 and
    # CATS 2 (dropped), CAME 3 (came -> left -> she), BARKED 4 (barked ->
    # slept -> cat -> the), SINGS 3 (sings -> dances -> Bob), CAME_AND_LEFT 2
    assert labels_by_text(texts, labels) == {
        DOGS.text: "3", EATEN.text: "3", MAN.text: "4+", CAME.text: "3",
        BARKED.text: "4+", SINGS.text: "3"}


def test_top_constituents_sequences_and_top_k():
    assert TopConstituents.sequence(DOGS) == "nsubj ROOT advmod"
    assert TopConstituents.sequence(EATEN) == "nsubj aux ROOT dobj"
    assert TopConstituents.sequence(MAN) == "nsubj ROOT dobj"
    assert TopConstituents.sequence(CAME) == "nsubj ROOT cc conj"
    parses = [DOGS, EATEN, MAN, WILL, CATS]
    # "nsubj ROOT dobj" twice; the rest once: "aux ROOT" first alphabetically
    texts, labels = TopConstituents(num_classes=2).examples(texts_of(parses), None, parses)
    assert labels_by_text(texts, labels) == {
        MAN.text: "nsubj ROOT dobj", WILL.text: "aux ROOT", CATS.text: "nsubj ROOT dobj"}


def test_tense_subject_and_object_number():
    texts, labels = Tense().examples(texts_of(PARSES), None, PARSES)
    assert labels_by_text(texts, labels) == {
        DOGS.text: "Past", EATEN.text: "Pres",  # "has eaten": from the aux
        MAN.text: "Pres", CATS.text: "Pres", CAME.text: "Past",
        BARKED.text: "Past", SINGS.text: "Pres", CAME_AND_LEFT.text: "Past"}
    texts, labels = SubjectNumber().examples(texts_of(PARSES), None, PARSES)
    assert labels_by_text(texts, labels) == {  # common nouns only
        DOGS.text: "Plur", MAN.text: "Sing", CATS.text: "Plur", BARKED.text: "Sing"}
    texts, labels = SubjectNumber(pos=("PRON",)).examples(texts_of(PARSES), None, PARSES)
    assert labels_by_text(texts, labels) == {
        EATEN.text: "Sing", CAME.text: "Sing", CAME_AND_LEFT.text: "Sing"}
    texts, labels = ObjectNumber().examples(texts_of(PARSES), None, PARSES)
    assert labels_by_text(texts, labels) == {
        EATEN.text: "Plur", MAN.text: "Sing", CATS.text: "Plur"}


def test_coordination_inversion_spans_and_swaps():
    assert clause_spans(CAME) == ([0, 1], [2, 3], [4, 5], [6])
    assert clause_spans(BARKED) == ([0, 1, 2], [3], [4, 5, 6], [7])
    assert clause_spans(SINGS) == ([0, 1], [2], [3, 4], [5])
    for other in (DOGS, EATEN, MAN, WILL, CATS, CAME_AND_LEFT):
        assert clause_spans(other) is None
    # default_rng(0) draws 0.64, 0.27, 0.04: O, I, I
    texts, labels = CoordinationInversion().examples(
        texts_of(PARSES), np.random.default_rng(0), PARSES)
    assert labels == ["O", "I", "I"]
    assert texts == [
        "I came , and she left .",
        "The cat slept but the dog barked .",   # capitals follow the first word
        "Bob dances and Ann sings .",           # proper nouns keep theirs
    ]
    texts, labels = CoordinationInversion().examples(
        [CAME.text], np.random.default_rng(2), [CAME])  # 0.26: swapped
    assert (texts, labels) == (["She left , and I came ."], ["I"])
    # in a text of two sentences, the one that qualifies; the other stays
    two = parse(("Wow", "INTJ", "ROOT", 0), ("!", "PUNCT", "punct", 0),
                ("I", "PRON", "nsubj", 3), ("came", "VERB", "ROOT", 3),
                ("and", "CCONJ", "cc", 3), ("she", "PRON", "nsubj", 6),
                ("left", "VERB", "conj", 3), (".", "PUNCT", "punct", 3))
    assert clause_spans(two) == ([2, 3], [4], [5, 6], [7])
    texts, labels = CoordinationInversion().examples(
        [two.text], np.random.default_rng(2), [two])
    assert (texts, labels) == (["Wow ! She left and I came ."], ["I"])


# -- build_probing_task ---------------------------------------------------------

def length_corpus():
    """Sentences of distinct words: 30 / 20 / 25 / 40 / 20 / 5 in the six
    default length bins (5, 10, 15, 20, 25 and 30 words)."""
    sentences, k = [], 0
    for n_words, count in ((5, 30), (10, 20), (15, 25), (20, 40), (25, 20), (30, 5)):
        for _ in range(count):
            sentences.append(" ".join(f"w{k}x{j}" for j in range(n_words)) + ".")
            k += 1
    return sentences


def test_build_balances_splits_and_is_seeded():
    sentences = length_corpus()
    task = build_probing_task("sentence_length", sentences, seed=0, source="toy")
    # "26+" has 5 < 10 sentences: dropped; the others go down to 20 each;
    # per class: dev 2, test 2, train 16
    assert task.label_names() == ["1-8", "13-16", "17-20", "21-25", "9-12"]
    assert task.sizes() == {"train": 80, "dev": 10, "test": 10}
    for split, per_class in (("train", 16), ("dev", 2), ("test", 2)):
        assert set(task.label_distribution()[split].values()) == {per_class}
    assert task.source == "built from 140 sentences of toy"
    assert not task.silver
    assert task.description.startswith("**SentLen**")
    assert "Bins: 1-8, 9-12, 13-16, 17-20, 21-25, 26+." in task.description
    assert task.majority_baseline() == pytest.approx(0.2)
    # disjoint, and every text keeps its true label
    splits = [set(task.texts[s]) for s in ("train", "dev", "test")]
    assert sum(map(len, splits)) == 100 and len(set.union(*splits)) == 100
    truth = dict(zip(*SentenceLength().examples(sentences, None)))
    for s in ("train", "dev", "test"):
        assert all(truth[t] == label for t, label in zip(task.texts[s], task.labels[s]))
    again = build_probing_task("sentence_length", sentences, seed=0, source="toy")
    assert again.texts == task.texts and again.labels == task.labels
    other = build_probing_task("sentence_length", sentences, seed=1)
    assert other.texts["train"] != task.texts["train"]
    assert other.sizes() == task.sizes()


def test_build_caps_at_max_examples_keeping_class_shares():
    task = build_probing_task("sentence_length", length_corpus(), max_examples=50)
    # 5 classes x 10: per class dev 1, test 1, train 8
    assert task.sizes() == {"train": 40, "dev": 5, "test": 5}
    assert set(task.label_distribution()["train"].values()) == {8}
    task = build_probing_task("sentence_length", length_corpus(), split=(0.5, 0.0, 0.5))
    assert task.sizes() == {"train": 50, "dev": 0, "test": 50}


def test_build_cleans_repeats_and_whitespace():
    assert clean_sentences(["  A  b ", "", "A b", "c"]) == (["A b", "c"], [0, 3])
    sentences = length_corpus()
    task = build_probing_task("sentence_length", sentences + [" " + s for s in sentences])
    assert task.source == "built from 140 sentences"
    texts = [t for s in ("train", "dev", "test") for t in task.texts[s]]
    assert len(texts) == len(set(texts)) == 100


def test_build_errors():
    with pytest.raises(ConfigError) as e:
        build_probing_task("sentence_lenght", ["a b c"])
    message = str(e.value)
    assert "unknown probing task 'sentence_lenght' (did you mean 'sentence_length'?)" in message
    assert "valid tasks: sentence_length, word_content, bigram_shift, tree_depth" in message
    with pytest.raises(ConfigError, match="'tense_x'"):
        build_probing_tasks(["bigram_shift", "tense_x"], ["a b c"])
    with pytest.raises(KdplugError, match=r"probing task 'tense' needs a dependency "
                                          r"parser.*pip install \"kdplug\[spacy\]\""):
        build_probing_task("tense", ["She left."])
    with pytest.raises(KdplugError, match=r"'tense', 'tree_depth' need a dependency parser"):
        build_probing_tasks(["bigram_shift", "tense", "tree_depth"], ["She left."])
    few = [f"Sentence number {i} is here ." for i in range(15)]
    with pytest.raises(DataError, match=r"probing task 'sentence_length': only 15 of "
                                        r"15 sentences qualified, leaving 15 examples "
                                        r"in 1 class after balancing"):
        build_probing_task("sentence_length", few)
    with pytest.raises(ValueError, match="split"):
        build_probing_task("bigram_shift", few, split=(0.9, 0.2, 0.1))


class FakeParser:
    """Hands out prepared parses by text, counting its calls."""

    name = "hand-made parses"

    def __init__(self, parses):
        self.by_text = {p.text: p for p in parses}
        self.calls = 0

    def parse(self, sentences):
        self.calls += 1
        return [self.by_text[s] for s in sentences]


def tense_corpus():
    """30 past and 15 present sentences, `Cat<i> <verb> .`, the subject
    plural for odd i (23 singular, 22 plural)."""
    parses = []
    for i in range(45):
        past = i < 30
        parses.append(parse((f"Cat{i}", "NOUN", "nsubj", 1, PLUR if i % 2 else SING),
                            ("slept" if past else "sleeps", "VERB", "ROOT", 1,
                             PAST if past else PRES),
                            (".", "PUNCT", "punct", 1)))
    return parses


def test_build_syntactic_tasks_with_a_parser():
    parses = tense_corpus()
    parser = FakeParser(parses)
    task = build_probing_task("tense", texts_of(parses), parser=parser)
    assert task.silver
    assert task.description.endswith("Parsed by hand-made parses.")
    # 15 per class: dev round(1.5) = 2, test 2, train 11
    assert task.sizes() == {"train": 22, "dev": 4, "test": 4}
    assert task.label_distribution()["test"] == {"Past": 2, "Pres": 2}
    tasks = build_probing_tasks(["subject_number", "tense"], texts_of(parses),
                                parser=parser, seed=3)
    assert parser.calls == 2  # one call for both syntactic tasks
    assert list(tasks) == ["subject_number", "tense"]
    # 22 per class: dev round(2.2) = 2, test 2, train 18
    assert tasks["subject_number"].sizes() == {"train": 36, "dev": 4, "test": 4}
    alone = build_probing_task("tense", texts_of(parses), parser=parser, seed=3)
    assert tasks["tense"].texts == alone.texts  # its own rng per task


def test_registry():
    assert tuple(BUILDERS) == SURFACE_TASKS + SYNTACTIC_TASKS
    for name, builder in BUILDERS.items():
        assert builder.name == name
        assert builder.needs_parser == (name in SYNTACTIC_TASKS)
        assert builder.description.startswith("**")


def test_importing_probing_imports_neither_spacy_nor_tensorflow():
    code = ("import sys, kdplug.analysis.probing; "
            "print([m for m in ('spacy', 'tensorflow') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


# -- the real parser ------------------------------------------------------------

def test_with_the_real_spacy_pipeline():
    pytest.importorskip("spacy")
    try:
        parser = load_spacy_parser()
    except KdplugError:
        pytest.skip("no English spaCy pipeline installed")
    dogs, walked, came, cats = parser.parse([
        "The dogs barked loudly.", "She walked home.", "I came and she left.",
        "The cat eats fish."])
    assert dogs.tokens[dogs.root()].text == "barked"
    texts, labels = Tense().examples(["d", "w", "c", "e"], None, [dogs, walked, came, cats])
    assert labels == ["Past", "Past", "Past", "Pres"]
    texts, labels = SubjectNumber().examples(["d", "c"], None, [dogs, cats])
    assert labels == ["Plur", "Sing"]
    assert clause_spans(came) == ([0, 1], [2], [3, 4], [5])
    texts, labels = CoordinationInversion().examples(
        ["c"], np.random.default_rng(2), [came])
    assert (texts, labels) == (["She left and I came ."], ["I"])
