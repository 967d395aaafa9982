import dataclasses
from typing import Literal
from typing import Optional

from kdplug.config import PositiveInt
from kdplug.config import Probability
from kdplug.data import detokenize
from kdplug.data import is_word
from kdplug.data import tokenize
from kdplug.errors import ConfigError
from kdplug.storage import fingerprint
from kdplug_plugins.augmenters.ngram import check_ngram
from kdplug_plugins.augmenters.ngram import sample_ngram
from kdplug_plugins.augmenters.pos_replace import POSUnigramAugmenter
from kdplug_plugins.augmenters.pos_replace import replace_word
from kdplug_plugins.augmenters.pos_replace import require_fit


class TangAugmenter(POSUnigramAugmenter):
    """The full Tang et al. (2019) procedure ("Distilling Task-Specific
    Knowledge from BERT into Simple Neural Networks", section 3.3).

    For each word one uniform draw `X` decides: `X < p_mask` masks it,
    `p_mask <= X < p_mask + p_pos` replaces it with a same-POS corpus word
    (unigram distribution), otherwise it stays. Then, with probability
    `p_ng`, an n-gram (n uniform in `[n_min, n_max]`) of the result is kept.
    The paper's settings: `p_mask = p_pos = 0.1`, `p_ng = 0.25`, n in 1..5,
    and 20 (SST-2) or 10 samples per example (`n:` of the `augment` entry).

    Sentence pairs (`pair_rule: one_or_both`, the default): the paper, for
    its sentence-pair tasks, "cycle[s] through augmenting the first sentence
    only (holding the second fixed), the second sentence only (holding the
    first fixed), and both sentences". kdplug draws that choice uniformly
    and independently for each synthetic pair (one seeded draw, first /
    second / both with probability 1/3 each), so one of the two sentences is
    augmented 2/3 of the time and the three modes keep the paper's
    proportions, whatever `n`. `pair_rule: both` augments both sentences of
    every pair independently (kdplug 0.1's behaviour, and what every other
    augmenter does).

    Config:
        p_mask, p_pos, p_ng, n_min, n_max: as above.
        pair_rule: `one_or_both` (default) or `both`, see above.
        mask_token: the mask text.
        pos_source, lexicon, wordnet_dir: see `pos-replace`.

    Args:
        config: the `Config`.
        pos_source: a ready `POSSource` (overrides the config's choice).

    Examples:

    ```yaml
    augment:
      - {name: tang, n: 20}
      - {name: tang, n: 10, pair_rule: both}   # pairs: both sentences each time
    ```
    """

    name = "tang"
    description = "mask / POS-replace / n-gram in one draw (Tang et al. 2019)"

    path_fields = ("lexicon", "wordnet_dir")

    @dataclasses.dataclass
    class Config:
        p_mask: Probability = 0.1
        p_pos: Probability = 0.1
        p_ng: Probability = 0.25
        n_min: PositiveInt = 1
        n_max: PositiveInt = 5
        mask_token: str = "[MASK]"
        pos_source: Literal["auto", "wordnet", "lexicon"] = "auto"
        lexicon: Optional[str] = None
        wordnet_dir: Optional[str] = None
        pair_rule: Literal["one_or_both", "both"] = "one_or_both"

        def __post_init__(self):
            if self.p_mask + self.p_pos > 1.0:
                raise ConfigError(f"p_mask + p_pos must be <= 1 (p_mask is {self.p_mask})",
                                  field="p_pos", value=self.p_pos)
            check_ngram(self.n_min, self.n_max)

    def augment_text(self, text, rng):
        require_fit(self)
        cfg = self.config
        tokens, gaps = tokenize(text)
        for i, token in enumerate(tokens):
            if not is_word(token):
                continue
            x = rng.random()
            if x < cfg.p_mask:
                tokens[i] = cfg.mask_token
            elif x < cfg.p_mask + cfg.p_pos:
                tokens[i] = replace_word(self.unigrams, token, rng)
        if rng.random() < cfg.p_ng:
            tokens, gaps = sample_ngram(tokens, gaps, rng, cfg.n_min, cfg.n_max)
        return detokenize(tokens, gaps)

    def augment_pairs(self, texts, pairs, rng):
        """`pair_rule: one_or_both`: per pair one draw `k = rng.integers(3)`
        (0: first sentence only, 1: second only, 2: both), then the chosen
        sentence(s) go through `augment_text` in order (first, second);
        `both`: the `Augmenter` default."""
        if self.config.pair_rule == "both":
            return super().augment_pairs(texts, pairs, rng)
        new_texts, new_pairs = [], []
        for text, pair in zip(texts, pairs):
            k = int(rng.integers(3))
            new_texts.append(text if k == 1 else self.augment_text(text, rng))
            new_pairs.append(pair if k == 0 else self.augment_text(pair, rng))
        return new_texts, new_pairs

    def fingerprint(self):
        # kdplug 0.1's key for `pair_rule: both` (its only behaviour), so its
        # cached transfer sets stay valid; `one_or_both` adds a suffix.
        config = dataclasses.asdict(self.config)
        rule = config.pop("pair_rule")
        base = fingerprint({"name": self.name, "class": type(self).__qualname__,
                            "config": config})
        pos = self.unigrams.pos_source.fingerprint()
        suffix = "" if rule == "both" else f":pair_rule={rule}"
        return f"{base}:{pos}{suffix}"
