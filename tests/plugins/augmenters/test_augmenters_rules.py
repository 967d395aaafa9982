"""Tang et al. (2019) augmenters: mask, pos-replace, ngram and tang.

POS classes come from a small injected lexicon, so nothing here needs
WordNet.
"""

import collections

import numpy as np
import pytest

from kdplug.config import parse
from kdplug.data.augmentation import is_word
from kdplug.data.augmentation import tokenize
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.plugin.manager import PluginManager
from kdplug_plugins import augmenters as augmenters_plugin
from kdplug_plugins.augmenters.lexicon_pos import LexiconPOS
from kdplug_plugins.augmenters.mask import MaskAugmenter
from kdplug_plugins.augmenters.ngram import NGramAugmenter
from kdplug_plugins.augmenters.pos_replace import POSReplaceAugmenter
from kdplug_plugins.augmenters.tang import TangAugmenter

LEXICON = {
    "film": "n", "movie": "n", "plot": "n", "story": "n",
    "films": "n-pl", "movies": "n-pl",
    "great": "a", "dull": "a", "fun": "a",
    "was": "be", "is": "be",
}
CORPUS = [
    "The film was great.", "The movie was dull.", "A great plot, a great story!",
    "The film is fun.", "Films and movies.", "The film was fun.",
]
TEXT = "The film was great, really!"
WORDS = ["The", "film", "was", "great", "really"]


def pos():
    return LexiconPOS(LEXICON, guess_suffixes=False)


def rng(seed=0):
    return np.random.default_rng(seed)


def words_of(text):
    return [t for t in tokenize(text)[0] if is_word(t) or t == "[MASK]"]


def test_the_plugin_registers_every_augmenter():
    pm = PluginManager(load_entrypoints=False)
    record = pm.register(augmenters_plugin, name="augmenters")
    assert record.status == "ok", record.error
    assert pm.augmenters.names() == [
        "contextual", "mask", "ngram", "pos-replace", "tang"]
    assert pm.augmenters.get("tang") is TangAugmenter


# ------------------------------------------------------------------- mask
def test_mask_draws_once_per_word_and_skips_punctuation():
    draws = rng(0).random(len(WORDS))  # [.64 .27 .04 .02 .81]
    expected = ["[MASK]" if d < 0.5 else w for w, d in zip(WORDS, draws)]
    out = MaskAugmenter(MaskAugmenter.Config(p_mask=0.5)).augment_text(TEXT, rng(0))
    assert out == "The [MASK] [MASK] [MASK], really!"
    assert words_of(out) == expected
    every = MaskAugmenter(MaskAugmenter.Config(p_mask=1.0, mask_token="<m>"))
    assert every.augment_text(TEXT, rng()) == "<m> <m> <m> <m>, <m>!"
    none = MaskAugmenter(MaskAugmenter.Config(p_mask=0.0))
    assert none.augment([TEXT, "A B"], rng()) == [TEXT, "A B"]


def test_mask_rate_matches_p_mask():
    aug = MaskAugmenter()  # p_mask = 0.1, the paper's
    g = rng(5)
    masked = [w == "[MASK]" for _ in range(400)
              for w in words_of(aug.augment_text(TEXT, g))]
    assert abs(np.mean(masked) - 0.1) < 0.02


# ------------------------------------------------------------------ ngram
def test_ngram_keeps_n_consecutive_words():
    out = NGramAugmenter().augment([TEXT] * 4, rng(0))
    assert out == ["The film was", "The", "film was great, really", TEXT]
    counts = collections.Counter()
    g = rng(1)
    for _ in range(500):
        got = words_of(NGramAugmenter().augment_text(TEXT, g))
        n = len(got)
        assert 1 <= n <= 5
        start = WORDS.index(got[0])
        assert got == WORDS[start:start + n]  # contiguous, in order
        counts[n] += 1
    # n uniform in 1..5; n = 5 (the whole text) as often as the others.
    assert set(counts) == {1, 2, 3, 4, 5}
    assert all(70 < c < 130 for c in counts.values())


def test_ngram_options():
    two = NGramAugmenter(NGramAugmenter.Config(n_min=2, n_max=2))
    assert two.augment_text("Short", rng()) == "Short"
    assert two.augment_text("a b, c", rng(0)) in ("a b", "b, c")
    never = NGramAugmenter(NGramAugmenter.Config(p_ng=0.0))
    assert never.augment_text(TEXT, rng()) == TEXT
    with pytest.raises(ConfigError, match=r"^n_max: must be >= n_min \(3\) \(got 2\)$"):
        NGramAugmenter.Config(n_min=3, n_max=2)
    with pytest.raises(ConfigError, match=r"augment.p_ng: must be in \[0, 1\] \(got 1.5\)"):
        parse(NGramAugmenter.Config, {"p_ng": 1.5}, "augment")


# ------------------------------------------------------------ pos-replace
def test_unigrams_per_pos_class_come_from_the_corpus():
    aug = POSReplaceAugmenter(pos_source=pos()).fit(CORPUS)
    classes = {tag: (words, list(cum)) for tag, (words, cum) in
               aug.unigrams.classes.items()}
    assert classes["n"] == (["film", "movie", "plot", "story"], [3, 4, 5, 6])
    assert classes["a"] == (["dull", "fun", "great"], [1, 3, 6])
    assert classes["det"] == (["a", "the"], [2, 6])  # closed-class words
    assert classes["be"] == (["is", "was"], [1, 4])
    assert "=really" not in classes  # not in the corpus: no class


def test_pos_replace_with_fixed_seed():
    aug = POSReplaceAugmenter(POSReplaceAugmenter.Config(p_pos=0.5),
                              pos_source=pos()).fit(CORPUS)
    assert aug.augment([TEXT, "Movies and films"], rng(0)) == [
        "The plot was great, really!", "Movies and films"]


def test_pos_replace_always_changes_to_the_same_class():
    aug = POSReplaceAugmenter(POSReplaceAugmenter.Config(p_pos=1.0),
                              pos_source=pos()).fit(CORPUS)
    g = rng(2)
    seen = collections.defaultdict(collections.Counter)
    for _ in range(600):
        out = words_of(aug.augment_text(TEXT, g))
        assert out[0] == "A"  # "The" -> the other determiner, capitalised
        assert out[1] in ("movie", "plot", "story")
        assert out[2] == "is" and out[3] in ("dull", "fun")
        assert out[4] == "really"  # a class of its own: kept
        seen["n"][out[1]] += 1
        seen["a"][out[3]] += 1
    # Unigram distribution without the word itself: movie 1 : plot 1 : story 1
    # for "film"; dull 1 : fun 2 for "great".
    assert all(160 < c < 240 for c in seen["n"].values())
    assert 160 < seen["a"]["dull"] < 240


def test_pos_replace_needs_fit():
    with pytest.raises(KdplugError, match="fit"):
        POSReplaceAugmenter(pos_source=pos()).augment_text(TEXT, rng())


# ------------------------------------------------------------------- tang
def test_tang_with_fixed_seeds():
    aug = TangAugmenter(pos_source=pos()).fit(CORPUS)  # the paper's settings
    assert aug.augment([TEXT] * 6, rng(1)) == [
        "The film is great, really!", "The film was fun, really!", TEXT,
        "The film is great, really!", "The [MASK] was great, [MASK]!", TEXT]
    cfg = TangAugmenter.Config(p_mask=0.3, p_pos=0.3, p_ng=0.5)
    aug = TangAugmenter(cfg, pos_source=pos()).fit(CORPUS)
    assert aug.augment([TEXT] * 6, rng(1)) == [
        "is great, really", "A plot [MASK] fun, [MASK]!", "film was great, really",
        "A film was fun, really!", "A film was great, [MASK]!",
        "[MASK] [MASK] was great"]


def test_tang_one_draw_decides_mask_replace_or_keep():
    cfg = TangAugmenter.Config(p_mask=0.3, p_pos=0.3, p_ng=0.0)
    aug = TangAugmenter(cfg, pos_source=pos()).fit(CORPUS)
    g = rng(4)
    outcome = collections.Counter()
    for _ in range(500):
        for before, after in zip(WORDS[:4], words_of(aug.augment_text(TEXT, g))):
            # "really" is left out: it has no same-class replacement.
            outcome["mask" if after == "[MASK]" else
                    "keep" if after == before else "replace"] += 1
    total = sum(outcome.values())
    for kind, p in (("mask", 0.3), ("replace", 0.3), ("keep", 0.4)):
        assert abs(outcome[kind] / total - p) < 0.03, outcome
    # With p_mask + p_pos = 1 no word is kept: it is masked or replaced.
    every = TangAugmenter(TangAugmenter.Config(p_mask=0.5, p_pos=0.5, p_ng=0.0),
                          pos_source=pos()).fit(CORPUS)
    for _ in range(50):
        out = words_of(every.augment_text(TEXT, g))
        assert all(a != b for a, b in zip(WORDS[:4], out))


def test_tang_ngram_counts_masks_as_words():
    cfg = TangAugmenter.Config(p_mask=1.0, p_pos=0.0, p_ng=1.0, n_min=2, n_max=2)
    aug = TangAugmenter(cfg, pos_source=pos()).fit(CORPUS)
    assert aug.augment_text(TEXT, rng(0)) in ("[MASK] [MASK]", "[MASK], [MASK]")


def test_tang_config_is_checked():
    with pytest.raises(ConfigError, match=r"^augment.p_pos: p_mask \+ p_pos must be <= 1 "
                       r"\(p_mask is 0.6\) \(got 0.5\)"):
        parse(TangAugmenter.Config, {"p_mask": 0.6, "p_pos": 0.5}, "augment")
    with pytest.raises(ConfigError, match=r"augment.p_pos: must be in \[0, 1\]"):
        parse(TangAugmenter.Config, {"p_pos": -0.1}, "augment")
    with pytest.raises(ConfigError, match=r"augment.n_min: must be >= 1 \(got 0\)"):
        parse(TangAugmenter.Config, {"n_min": 0}, "augment")


# ------------------------------------------------------------ tang: pairs
def mask_all(pair_rule="one_or_both"):
    cfg = TangAugmenter.Config(p_mask=1.0, p_pos=0.0, p_ng=0.0, pair_rule=pair_rule)
    return TangAugmenter(cfg, pos_source=pos()).fit(CORPUS)


def test_tang_pairs_augment_first_second_or_both_by_one_draw():
    # Every word of an augmented sentence is masked, so which one changed shows.
    first, second = "The film was great.", "A dull plot, really!"
    aug = mask_all()
    masked = {first: aug.augment_text(first, rng(0)),
              second: aug.augment_text(second, rng(0))}
    assert masked == {first: "[MASK] [MASK] [MASK] [MASK].",
                      second: "[MASK] [MASK] [MASK], [MASK]!"}
    texts, pairs = aug.augment_pairs([first] * 9, [second] * 9, rng(7))
    # By hand: replay the generator. Per pair one integers(3) draw, then per
    # augmented sentence one random() per word and one for the n-gram rule.
    g, expected = rng(7), []
    for _ in range(9):
        k = int(g.integers(3))
        expected.append(k)
        for sentence, changed in ((first, k != 1), (second, k != 0)):
            if changed:
                g.random(len(words_of(sentence)) + 1)
    got = [0 if p == second else 1 if t == first else 2 for t, p in zip(texts, pairs)]
    assert got == expected and set(got) == {0, 1, 2}
    for t, p, k in zip(texts, pairs, got):
        assert t == (first if k == 1 else masked[first])
        assert p == (second if k == 0 else masked[second])


def test_tang_pairs_one_sentence_two_thirds_of_the_time():
    # 3,000 seeded pairs: each mode has probability 1/3, so its share has
    # standard deviation sqrt(1/3 * 2/3 / 3000) = 0.0086; 0.03 is 3.5 sd.
    texts, pairs = mask_all().augment_pairs(["The film."] * 3000, ["Fun."] * 3000,
                                            rng(11))
    counts = collections.Counter(
        "second" if t == "The film." else "first" if p == "Fun." else "both"
        for t, p in zip(texts, pairs))
    assert sum(counts.values()) == 3000
    for mode in ("first", "second", "both"):
        assert abs(counts[mode] / 3000 - 1 / 3) < 0.03, counts
    assert abs((counts["first"] + counts["second"]) / 3000 - 2 / 3) < 0.03


def test_tang_pair_rule_both_is_the_augmenter_default():
    # `both` (kdplug 0.1): all first sentences, then all second ones, drawn
    # from one generator, exactly as two `augment()` calls.
    cfg = TangAugmenter.Config(p_mask=0.3, p_pos=0.3, p_ng=0.5, pair_rule="both")
    aug = TangAugmenter(cfg, pos_source=pos()).fit(CORPUS)
    g = rng(3)
    expected = (aug.augment([TEXT] * 4, g), aug.augment(CORPUS[:4], g))
    assert aug.augment_pairs([TEXT] * 4, CORPUS[:4], rng(3)) == expected
    both = mask_all("both").augment_pairs(["The film."] * 50, ["Fun."] * 50, rng(0))
    assert set(both[0]) == {"[MASK] [MASK]."} and set(both[1]) == {"[MASK]."}
    assert TangAugmenter.Config().pair_rule == "one_or_both"
    assert mask_all().fingerprint() != mask_all("both").fingerprint()
