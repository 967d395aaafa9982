import dataclasses

from kdplug.config import PositiveInt
from kdplug.config import Probability
from kdplug.data import Augmenter
from kdplug.data import detokenize
from kdplug.data import is_special
from kdplug.data import is_word
from kdplug.data import tokenize
from kdplug.errors import ConfigError


def sample_ngram(tokens, gaps, rng, n_min=1, n_max=5):
    """A random n-gram of the words, n uniform in `[n_min, n_max]`.

    Returns `(tokens, gaps)` of the span from the first to the last chosen
    word (punctuation between them kept), or the input when the text has
    no more than n words. Special tokens (`[MASK]`) count as words.
    """
    n = int(rng.integers(n_min, n_max + 1))
    words = [i for i, t in enumerate(tokens) if is_word(t) or is_special(t)]
    if n >= len(words):
        return tokens, gaps
    start = int(rng.integers(0, len(words) - n + 1))
    first, last = words[start], words[start + n - 1]
    return tokens[first:last + 1], ["", *gaps[first + 1:last + 1], ""]


class NGramAugmenter(Augmenter):
    """Tang et al. (2019) n-gram sampling: keep only n consecutive words.

    With probability `p_ng`, n is drawn uniformly from `[n_min, n_max]` and
    a uniformly placed window of n words replaces the text (texts of n words
    or fewer stay whole).

    Config:
        p_ng: probability of sampling an n-gram (1.0 when used alone; the
            paper's 0.25 is the `tang` augmenter's default).
        n_min, n_max: the range of n (the paper: 1..5).

    Examples:

    ```yaml
    augment:
      - {name: ngram, n: 5, n_max: 3}
    ```

    ```python
    NGramAugmenter().augment_text("a truly great film, really", rng)
    # -> "great film, really"
    ```
    """

    name = "ngram"
    description = "sample n consecutive words (Tang et al. 2019)"

    @dataclasses.dataclass
    class Config:
        p_ng: Probability = 1.0
        n_min: PositiveInt = 1
        n_max: PositiveInt = 5

        def __post_init__(self):
            check_ngram(self.n_min, self.n_max)

    def augment_text(self, text, rng):
        if rng.random() >= self.config.p_ng:
            return text
        tokens, gaps = tokenize(text)
        return detokenize(*sample_ngram(tokens, gaps, rng, self.config.n_min,
                                        self.config.n_max))


def check_ngram(n_min, n_max):
    """An n-gram config's cross-field rule: `n_min <= n_max`."""
    if n_min > n_max:
        raise ConfigError(f"must be >= n_min ({n_min})", field="n_max", value=n_max)
