"""The augmenter contract and the word helpers."""

import dataclasses

import numpy as np
import pytest

from kdplug.data.augmentation import Augmenter
from kdplug.data.augmentation import detokenize
from kdplug.data.augmentation import is_special
from kdplug.data.augmentation import is_word
from kdplug.data.augmentation import match_case
from kdplug.data.augmentation import normalize
from kdplug.data.augmentation import tokenize


@pytest.mark.parametrize("text", [
    "It's great, really.",
    "  two  spaces\tand a tab ",
    "Café crème [MASK] -- 21st-century!",
    "",
    "...",
])
def test_tokenize_round_trips(text):
    tokens, gaps = tokenize(text)
    assert len(gaps) == len(tokens) + 1
    assert detokenize(tokens, gaps) == text


def test_tokens_words_and_specials():
    tokens, gaps = tokenize("It's a 21st-century [MASK], isn't it?")
    assert tokens == ["It's", "a", "21st", "-", "century", "[MASK]", ",",
                      "isn't", "it", "?"]
    assert [is_word(t) for t in tokens] == [
        True, True, True, False, True, False, False, True, True, False]
    assert is_special("[MASK]") and is_special("[UNK]") and not is_special("[")
    tokens[1] = "one"
    assert detokenize(tokens, gaps) == "It's one 21st-century [MASK], isn't it?"


def test_match_case_and_normalize():
    assert [match_case("film", w) for w in ("movie", "Movie", "MOVIE", "A")] == [
        "film", "Film", "FILM", "Film"]
    assert normalize("a  film ,really!") == normalize("a film, really !") == (
        "a film , really !")


class Shout(Augmenter):
    name = "shout"

    @dataclasses.dataclass
    class Config:
        p: float = 0.5

    def augment_text(self, text, rng):
        return text.upper() if rng.random() < self.config.p else text


def test_base_class_loops_over_texts_with_one_generator():
    aug = Shout()
    assert aug.config == Shout.Config(p=0.5)
    assert aug.fit(["ignored"]) is aug
    draws = np.random.default_rng(3).random(4)
    out = aug.augment(["a", "b", "c", "d"], np.random.default_rng(3))
    assert out == [t.upper() if d < 0.5 else t for t, d in zip("abcd", draws)]
    assert out == ["A", "B", "c", "d"]


def test_fingerprint_follows_the_config():
    assert Shout().fingerprint() == Shout().fingerprint()
    assert Shout().fingerprint() != Shout(Shout.Config(p=0.25)).fingerprint()


def test_unimplemented_augmenter_says_what_to_write():
    class Empty(Augmenter):
        name = "empty"

    with pytest.raises(NotImplementedError, match="augment_text"):
        Empty().augment(["x"], np.random.default_rng(0))
