import dataclasses
from typing import Literal
from typing import Optional

from kdplug.config import Probability
from kdplug.data import Augmenter
from kdplug.data import detokenize
from kdplug.data import is_word
from kdplug.data import match_case
from kdplug.data import tokenize
from kdplug.errors import KdplugError
from kdplug_plugins.augmenters.pos_source import make_pos_source
from kdplug_plugins.augmenters.pos_unigrams import POSUnigrams


class POSUnigramAugmenter(Augmenter):
    """Base of augmenters that replace words by same-POS corpus words: holds
    the corpus' per-POS unigram distribution, learnt in `fit()`.

    Args:
        config: the subclass's `Config` (with `pos_source`, `lexicon`,
            `wordnet_dir`).
        pos_source: a POS source object overriding the config's (tests).
    """

    def __init__(self, config=None, pos_source=None):
        super().__init__(config)
        self.unigrams = POSUnigrams(pos_source or pos_source_from(self.config))
        self.fitted = False

    def fit(self, texts):
        self.unigrams.fit(texts)
        self.fitted = True
        return self


class POSReplaceAugmenter(POSUnigramAugmenter):
    """Tang et al. (2019) POS-guided replacement.

    Each word, with probability `p_pos`, is replaced by another word of the
    same POS class drawn from the corpus's unigram distribution of that
    class (the corpus is what `fit()` saw: the original training texts).
    Capitalisation follows the replaced word. POS classes come from a
    pluggable `POSSource` (WordNet by default; see docs/augmentation.md).

    Config:
        p_pos: probability of replacing each word.
        pos_source: `auto`, `wordnet` or `lexicon`.
        lexicon: optional `word<TAB>tag` file whose entries win.
        wordnet_dir: WordNet database folder (default: searched).

    Args:
        config: the `Config`.
        pos_source: a ready `POSSource` (overrides the config's choice).

    Examples:

    ```yaml
    augment:
      - {name: pos-replace, n: 10, p_pos: 0.2}
    ```

    ```python
    aug = POSReplaceAugmenter(pos_source=LexiconPOS({"film": "n", "plot": "n"}))
    aug.fit(corpus).augment_text("a great film", rng)  # -> "a great plot"
    ```
    """

    name = "pos-replace"
    description = "replace words by same-POS corpus words (Tang et al. 2019)"

    path_fields = ("lexicon", "wordnet_dir")

    @dataclasses.dataclass
    class Config:
        p_pos: Probability = 0.1
        pos_source: Literal["auto", "wordnet", "lexicon"] = "auto"
        lexicon: Optional[str] = None
        wordnet_dir: Optional[str] = None

    def augment_text(self, text, rng):
        require_fit(self)
        tokens, gaps = tokenize(text)
        for i, token in enumerate(tokens):
            if is_word(token) and rng.random() < self.config.p_pos:
                tokens[i] = replace_word(self.unigrams, token, rng)
        return detokenize(tokens, gaps)

    def fingerprint(self):
        return f"{super().fingerprint()}:{self.unigrams.pos_source.fingerprint()}"


def pos_source_from(config):
    return make_pos_source(config.pos_source, config.lexicon, config.wordnet_dir)


def replace_word(unigrams, token, rng):
    """`token` replaced by a same-POS corpus word (or kept if none)."""
    choice = unigrams.sample(token, rng)
    return token if choice is None else match_case(choice, token)


def require_fit(augmenter):
    if not augmenter.fitted:
        raise KdplugError(
            f"augmenter {augmenter.name!r}: call fit(corpus_texts) before "
            "augment() (the POS unigram distribution comes from the corpus)"
        )
