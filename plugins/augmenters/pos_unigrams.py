import collections

import numpy as np

from kdplug.data import is_word
from kdplug.data import tokenize

_MAX_TRIES = 64


class POSUnigrams:
    """A corpus's unigram distribution within each POS class.

    `sample(word, rng)` draws a replacement for `word`: another word of the
    same class, with probability proportional to its count in the corpus
    (Tang et al. 2019, "POS-guided word replacement"). The word itself is
    excluded (by redrawing), so a replacement always changes the word.

    Args:
        pos_source: a `POSSource` (anything with `tag(word) -> str`).

    Examples:

    ```python
    unigrams = POSUnigrams(LexiconPOS({"film": "n", "plot": "n"}))
    unigrams.fit(["the film", "a plot", "the plot"])
    unigrams.sample("film", rng)  # -> "plot"
    ```
    """

    def __init__(self, pos_source):
        self.pos_source = pos_source
        self._tags = {}
        self.classes = {}

    def tag(self, word):
        word = word.lower()
        if word not in self._tags:
            self._tags[word] = self.pos_source.tag(word)
        return self._tags[word]

    def fit(self, texts):
        counts = collections.Counter(
            token.lower()
            for text in texts
            for token in tokenize(text)[0]
            if is_word(token)
        )
        grouped = collections.defaultdict(list)
        for word in sorted(counts):
            grouped[self.tag(word)].append(word)
        self.classes = {
            tag: (words, np.cumsum([counts[w] for w in words], dtype="float64"))
            for tag, words in grouped.items()
        }
        return self

    def sample(self, word, rng):
        """A same-class replacement for `word` (lower-cased), or None."""
        word = word.lower()
        entry = self.classes.get(self.tag(word))
        if entry is None:
            return None
        words, cumulative = entry
        if len(words) == 1 and words[0] == word:
            return None
        for _ in range(_MAX_TRIES):
            index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1],
                                        side="right"))
            choice = words[min(index, len(words) - 1)]
            if choice != word:
                return choice
        return None
