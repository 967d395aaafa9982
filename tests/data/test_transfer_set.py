"""Transfer sets: originals kept, augmented unlabelled, deduplicated,
chained in config order, seeded; the `augment:` config list."""

import dataclasses
import os

import numpy as np
import pytest

from kdplug.data import Examples
from kdplug.data.augmentation import Augmenter
from kdplug.data.augmentation import normalize
from kdplug.data.transfer_set import AugmentStep
from kdplug.data.transfer_set import build_transfer_set
from kdplug.errors import ConfigError
from kdplug.errors import PluginError
from kdplug.plugin.manager import PluginManager
from kdplug.run.preflight import augmenters_from_config
from kdplug_plugins import augmenters as augmenters_plugin
from kdplug_plugins.augmenters.lexicon_pos import LexiconPOS
from kdplug_plugins.augmenters.mask import MaskAugmenter
from kdplug_plugins.augmenters.ngram import NGramAugmenter
from kdplug_plugins.augmenters.tang import TangAugmenter

LEXICON = {"film": "n", "movie": "n", "plot": "n", "story": "n",
           "great": "a", "dull": "a", "fun": "a", "was": "be", "is": "be"}
TEXTS = ["The film was great.", "The movie was dull.", "A great plot, a great story!",
         "The film is fun.", "Fun.", "The film was great."]  # a duplicate original


def examples():
    return Examples(list(TEXTS), np.array([1, 0, 1, 1, 0, 1], "int32"),
                    source="toy")


def tang(**options):
    return TangAugmenter(TangAugmenter.Config(**options),
                         pos_source=LexiconPOS(LEXICON, guess_suffixes=False))


def registry():
    pm = PluginManager(load_entrypoints=False)
    pm.register(augmenters_plugin, name="augmenters")
    return pm.augmenters


def test_originals_first_unchanged_then_unlabelled_unique_samples(caplog):
    original = examples()
    caplog.set_level("INFO", logger="kdplug")
    out = build_transfer_set(original, [AugmentStep(tang(), n=10)], seed=0)
    logs = [r.getMessage() for r in caplog.records]
    n = len(original)
    assert out.texts[:n] == TEXTS  # the duplicate original is kept too
    assert out.labels[:n].tolist() == [1, 0, 1, 1, 0, 1]
    assert out.labels.dtype == np.int32 and out.source == "toy"
    new = out.texts[n:]
    assert out.labels[n:].tolist() == [-1] * len(new)
    assert 15 <= len(new) <= 50  # at most 10 per example; duplicates dropped
    keys = [normalize(t) for t in new]
    assert len(set(keys)) == len(keys)
    assert not set(keys) & {normalize(t) for t in TEXTS}
    assert original.texts == TEXTS  # the input is not modified
    assert logs[0].startswith(f"augment: tang x10: +{len(new)} examples (")
    assert logs[-1] == (f"augment: transfer set of {len(out)} examples "
                        f"({n} original, {len(new)} augmented)")


def test_seeded_and_deterministic():
    def build(seed):
        return build_transfer_set(examples(), [AugmentStep(tang(), n=5)], seed=seed)

    a, b, c = build(3), build(3), build(4)
    assert a.texts == b.texts and a.labels.tolist() == b.labels.tolist()
    assert a.texts != c.texts
    # Exactly what rounds seeded by (seed, step, round) give.
    aug = tang().fit(TEXTS)
    first_round = aug.augment(TEXTS, np.random.default_rng([3, 0, 0]))
    expected = []
    for t in first_round:
        key = normalize(t)
        if key not in {normalize(x) for x in TEXTS + expected}:
            expected.append(t)
    assert a.texts[6:6 + len(expected)] == expected


class Constant(Augmenter):
    name = "constant"

    @dataclasses.dataclass
    class Config:
        text: str = "same"

    def augment_text(self, text, rng):
        return self.config.text


class Identity(Augmenter):
    name = "identity"

    def augment_text(self, text, rng):
        return text.replace(" ", "  ")  # only spacing differs


def test_duplicates_are_dropped():
    out = build_transfer_set(examples(), [AugmentStep(Identity(), n=3)])
    assert out.texts == TEXTS  # every sample equals an original
    out = build_transfer_set(examples(), [AugmentStep(Constant(), n=4),
                                          AugmentStep(Constant(), n=2)])
    assert out.texts == TEXTS + ["same"] and out.labels[-1] == -1


def test_steps_are_chained_in_config_order():
    steps = [
        AugmentStep(MaskAugmenter(MaskAugmenter.Config(p_mask=1.0)), n=1),
        AugmentStep(NGramAugmenter(NGramAugmenter.Config(n_min=1, n_max=1)), n=2),
        AugmentStep(Constant(Constant.Config("last")), n=1),
    ]
    out = build_transfer_set(examples(), steps, seed=1)
    new = out.texts[len(TEXTS):]
    # Step 1 (mask everything): one new text per distinct word/punct shape.
    assert new[0] == "[MASK] [MASK] [MASK] [MASK]."
    assert new[1] == "[MASK] [MASK] [MASK], [MASK] [MASK] [MASK]!"
    assert new[2] == "[MASK]."
    assert len(new) > 4 and all(len(t.split()) == 1 for t in new[3:-1])
    assert new[-1] == "last"


def test_sentence_pairs_go_through_both_texts():
    pairs = Examples(["A film.", "A plot.", "Fun"], np.array([0, 1, 1], "int32"),
                     pairs=["Great fun.", "Dull story!", "Great fun."])
    step = AugmentStep(MaskAugmenter(MaskAugmenter.Config(p_mask=1.0)), n=3)
    out = build_transfer_set(pairs, [step])
    # The second example's masked pair differs from the first's only in
    # its second text ("!"); both are kept. Repeats across rounds are not.
    assert out.texts == ["A film.", "A plot.", "Fun", "[MASK] [MASK].",
                         "[MASK] [MASK].", "[MASK]"]
    assert out.pairs == ["Great fun.", "Dull story!", "Great fun.", "[MASK] [MASK].",
                         "[MASK] [MASK]!", "[MASK] [MASK]."]
    assert out.labels.tolist() == [0, 1, 1, -1, -1, -1]


def test_tang_pairs_change_one_sentence_or_both_and_broken_pairs_are_named():
    # tang's default pair rule through the builder: every word of an augmented
    # sentence is masked, so each new pair shows which sentence changed.
    firsts = ["A film.", "A plot.", "Fun"]
    seconds = ["Great fun.", "Dull story!", "Great fun."]
    pairs = Examples(firsts, np.array([0, 1, 1], "int32"), pairs=seconds)
    step = AugmentStep(tang(p_mask=1.0, p_pos=0.0, p_ng=0.0), n=4)
    out = build_transfer_set(pairs, [step])
    new = list(zip(out.texts[3:], out.pairs[3:]))
    assert out.labels.tolist() == [0, 1, 1] + [-1] * len(new)
    # Each original has 3 possible masked pairs (first / second / both), so
    # at most 9 distinct new pairs; repeats across the 4 rounds are dropped.
    assert 3 < len(new) <= 9 and len(set(new)) == len(new)
    modes = set()
    for text, pair in new:
        i = firsts.index(text) if text in firsts else None
        j = seconds.index(pair) if pair in seconds else None
        modes.add("second" if i is not None else "first" if j is not None else "both")
        assert i is None or j is None  # never an unchanged pair
        assert text in firsts or set(text.replace(".", "").split()) == {"[MASK]"}
        assert pair in seconds or set(
            pair.replace(".", "").replace("!", "").split()) == {"[MASK]"}
    assert modes == {"first", "second", "both"}
    # `pair_rule: both`: every new pair has both sentences masked (0.1).
    step = AugmentStep(tang(p_mask=1.0, p_pos=0.0, p_ng=0.0, pair_rule="both"), n=4)
    out = build_transfer_set(pairs, [step])
    assert all(t not in firsts and p not in seconds
               for t, p in zip(out.texts[3:], out.pairs[3:]))

    class HalfPairs(Augmenter):
        name = "half"

        def augment_text(self, text, rng):
            return text + "!"

        def augment_pairs(self, texts, pairs, rng):
            return texts, pairs[:1]

    with pytest.raises(PluginError, match="'half' must return a list of 3 str"):
        build_transfer_set(pairs, [AugmentStep(HalfPairs(), 1)])


def test_no_steps_returns_the_examples():
    original = examples()
    assert build_transfer_set(original, []) is original


def test_a_broken_augmenter_is_named():
    class Broken(Augmenter):
        name = "broken"

        def augment(self, texts, rng):
            return texts[:1]

    with pytest.raises(PluginError, match="'broken' must return a list of 6 str"):
        build_transfer_set(examples(), [AugmentStep(Broken(), 1)])


def test_cached_transfer_set_is_reused(tmp_path, monkeypatch):
    steps = [AugmentStep(tang(), n=3)]
    first = build_transfer_set(examples(), steps, seed=0, cache=True)
    assert len(os.listdir(os.path.join(os.environ["KDPLUG_CACHE_DIR"], "transfer"))) == 1

    def explode(self, texts, rng):
        raise AssertionError("should come from the cache")

    monkeypatch.setattr(TangAugmenter, "augment", explode)
    again = build_transfer_set(examples(), [AugmentStep(tang(), n=3)], seed=0,
                               cache=True)
    assert again.texts == first.texts and again.labels.tolist() == first.labels.tolist()
    monkeypatch.undo()
    other = build_transfer_set(examples(), [AugmentStep(tang(), n=3)], seed=1,
                               cache=str(tmp_path / "sets"))
    assert other.texts != first.texts and len(os.listdir(tmp_path / "sets")) == 1


def test_config_entries_are_validated():
    reg = registry()
    steps = augmenters_from_config(
        [{"name": "tang", "n": 20, "pos_source": "lexicon"},
         {"name": "mask", "p_mask": 0.2}], reg)
    assert [(type(s.augmenter), s.n) for s in steps] == [
        (TangAugmenter, 20), (MaskAugmenter, 10)]
    assert steps[1].augmenter.config.p_mask == 0.2
    assert augmenters_from_config(None, reg) == []
    cases = [
        ([{"name": "tangg"}],
         "augment[0].name: unknown augmenter 'tangg' (did you mean 'tang'?)"),
        ([{"name": "mask", "p_mask": 2}], "augment[0].p_mask: must be in [0, 1] (got 2.0)"),
        ([{"name": "mask", "p_msk": 0.1}],
         "augment[0].p_msk: unknown key 'p_msk' (did you mean 'p_mask'?)"),
        ([{"name": "mask", "n": 0}], "augment[0].n: must be an integer >= 1"),
        ([{"n": 3}], "augment[0]: expected a mapping with a `name`"),
        ({"name": "mask"}, "augment: expected a list"),
    ]
    for entries, message in cases:
        with pytest.raises(ConfigError) as e:
            augmenters_from_config(entries, reg, file="exp.yaml")
        assert str(e.value).startswith(f"exp.yaml: {message}"), str(e.value)


def test_path_options_are_resolved(tmp_path):
    (tmp_path / "lex.tsv").write_text("film\tn\nplot\tn\n")
    [step] = augmenters_from_config(
        [{"name": "pos-replace", "pos_source": "lexicon", "lexicon": "lex.tsv"}],
        registry(), resolve_path=lambda p: str(tmp_path / p))
    assert step.augmenter.config.lexicon == str(tmp_path / "lex.tsv")
    assert step.augmenter.unigrams.pos_source.tag("plot") == "n"
