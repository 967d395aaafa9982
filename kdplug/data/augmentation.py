"""The augmenter contract, and word-level helpers for augmenter authors.

An augmenter turns texts into new texts for a *transfer set*: unlabelled
examples that only the teacher labels (Tang et al. 2019; Jiao et al. 2019).
Augmenters are registered through the `kdplug_register_augmenters` hook and
chained by `kdplug.data.transfer_set.build_transfer_set()`.

Words: `tokenize()` splits a text into word and punctuation tokens and keeps
the separators, so that an augmenter can change some tokens and
`detokenize()` gives back the text with its original spacing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import ClassVar

from kdplug.plugin.configurable import Configurable
from kdplug.storage import fingerprint

if TYPE_CHECKING:
    import numpy as np

# [MASK]-like special tokens, words (with inner apostrophes: "it's"), or one
# punctuation character.
_TOKEN_RE = re.compile(r"\[[A-Z]+\]|\w+(?:['\u2019]\w+)*|[^\w\s]")


class Augmenter(Configurable):
    """Makes new texts from texts (one output per input, in order).

    Subclasses set `name` (what configs write as `augment[].name`), a
    dataclass `Config` with their typed options, and implement either
    `augment()` (a batch at a time, e.g. for a model) or `augment_text()`
    (one text at a time). An output equal to its input is allowed: the
    transfer-set builder drops duplicates. All randomness must come from the
    `rng` argument so that a seed reproduces the transfer set.

    Args:
        config: an instance of the subclass's `Config` (defaults if None).

    Examples:

    ```python
    class Shout(Augmenter):
        name = "shout"

        @dataclasses.dataclass
        class Config:
            p: float = 0.5

        def augment_text(self, text, rng):
            return text.upper() if rng.random() < self.config.p else text

    Shout().augment(["a film"], np.random.default_rng(0))  # -> ["A FILM"]
    ```
    """

    # Config fields holding file or folder paths: resolved relative to the
    # config file by `kdplug.config.parse_augment(resolve_path=...)`.
    path_fields: ClassVar[tuple[str, ...]] = ()

    def fit(self, texts: Sequence[str]) -> Augmenter:
        """Learns corpus statistics from the original texts (default: none).

        Called once by the transfer-set builder before `augment()`.
        Returns self.
        """
        return self

    def augment(self, texts: Sequence[str], rng: np.random.Generator) -> list[str]:
        """Returns a list with one new text per text in `texts`.

        Args:
            texts: list of str.
            rng: a `numpy.random.Generator`; the only source of randomness.
        """
        return [self.augment_text(text, rng) for text in texts]

    def augment_pairs(self, texts: Sequence[str], pairs: Sequence[str],
                      rng: np.random.Generator) -> tuple[list[str], list[str]]:
        """New sentence pairs: `(new_texts, new_pairs)`, one each per input.

        The default sends every first sentence, then every second sentence,
        through `augment()` with the same generator (both sentences of every
        pair change independently). Override it for a pair rule of your own
        (e.g. `tang`'s `pair_rule: one_or_both`).

        Args:
            texts: list of str, the first sentences.
            pairs: list of str, the second sentences.
            rng: a `numpy.random.Generator`; the only source of randomness.
        """
        return self.augment(list(texts), rng), self.augment(list(pairs), rng)

    def augment_text(self, text: str, rng: np.random.Generator) -> str:
        raise NotImplementedError(
            f"{type(self).__name__} must implement augment() or augment_text()"
        )

    def fingerprint(self) -> str:
        """What the outputs depend on besides the input and the seed.

        Used to key cached transfer sets; extend it when an augmenter reads
        files or models (e.g. with their content hashes).
        """
        return fingerprint(
            {"name": self.name, "class": type(self).__qualname__,
             "config": dataclasses.asdict(self.config)}
        )


def tokenize(text: str) -> tuple[list[str], list[str]]:
    """Splits a text into tokens and the separators around them.

    Returns `(tokens, gaps)` with `len(gaps) == len(tokens) + 1`: `gaps[i]`
    is the text before `tokens[i]`, `gaps[-1]` the text after the last one,
    so `detokenize(tokens, gaps) == text`.

    Examples:

    >>> tokenize("It's great, really.")
    (["It's", 'great', ',', 'really', '.'], ['', ' ', '', ' ', '', ''])
    """
    tokens, gaps, end = [], [], 0
    for match in _TOKEN_RE.finditer(text):
        gaps.append(text[end:match.start()])
        tokens.append(match.group())
        end = match.end()
    gaps.append(text[end:])
    return tokens, gaps


def detokenize(tokens: Sequence[str], gaps: Sequence[str]) -> str:
    """The inverse of `tokenize()` (tokens may have been replaced)."""
    return "".join(g + t for g, t in zip(gaps, tokens)) + gaps[-1]


def is_word(token: str) -> bool:
    """True for word tokens (letters or digits), False for punctuation and
    special tokens such as `[MASK]`."""
    return not is_special(token) and any(c.isalnum() for c in token)


def is_special(token: str) -> bool:
    """True for special tokens such as `[MASK]` or `[UNK]`."""
    return len(token) > 2 and token.startswith("[") and token.endswith("]")


def match_case(word: str, like: str) -> str:
    """`word` with the capitalisation pattern of `like` (lower, Title, UPPER)."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def normalize(text: str) -> str:
    """A text's tokens joined by single spaces: the duplicate-detection key."""
    return " ".join(tokenize(text)[0])
