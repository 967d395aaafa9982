"""Surface probing tasks (Conneau et al. 2018), built without a parser:
sentence length, word content and bigram shift."""

import collections

from kdplug.analysis.probing.builder import ProbingBuilder
from kdplug.analysis.probing.builder import is_word
from kdplug.analysis.probing.builder import tokenize_words

# (first, last) word counts of each bin; None: no upper end.
# Conneau et al.'s six bins, the first and the last left open.
DEFAULT_LENGTH_BINS = ((1, 8), (9, 12), (13, 16), (17, 20), (21, 25), (26, None))


class SentenceLength(ProbingBuilder):
    """SentLen: the length of the sentence in words, in bins.

    Conneau et al. (2018) used six bins over 5-28 tokens ((5-8), (9-12),
    (13-16), (17-20), (21-25), (26-28)). Our corpora are wider (movie
    snippets average 19 words, tweets 14, from 1 to 50+), so the default
    keeps Conneau's bins and leaves the first and the last open:
    `1-8, 9-12, 13-16, 17-20, 21-25, 26+`. Length counts words as
    `tokenize_words` splits them, punctuation not counted.

    Args:
        bins: sequence of `(first, last)` word counts, ascending and not
            overlapping; `last=None` leaves the last bin open. A sentence in
            no bin is dropped.
        min_class_size: int. A bin with fewer sentences is dropped instead
            of shrinking every bin to its size (classes are balanced by
            downsampling to the smallest bin).

    Examples:

    >>> texts, labels = SentenceLength(bins=((1, 3), (4, None))).examples(
    ...     ["Hi there .", "This film is great !"], None)
    >>> labels
    ['1-3', '4+']
    """

    name = "sentence_length"
    description = (
        "**SentLen** (Conneau et al. 2018): the label is the sentence's length "
        "in words, binned. Words are counted as `tokenize_words` splits them "
        "(a word is a run of letters and digits, inner apostrophes and "
        "hyphens kept: *don't*, *well-made*), punctuation not counted. "
        "Default bins `1-8, 9-12, 13-16, 17-20, 21-25, 26+`: Conneau's six "
        "bins (5-8 ... 26-28 tokens) with the first and the last left open, "
        "as movie snippets and tweets are wider. Classes "
        "are balanced by downsampling every bin to the smallest one; a bin "
        "with fewer than 10 sentences is dropped instead. The text is the "
        "sentence as given.")

    def __init__(self, bins=DEFAULT_LENGTH_BINS, min_class_size=10):
        bins = tuple((int(lo), None if hi is None else int(hi)) for lo, hi in bins)
        if len(bins) < 2:
            raise ValueError(f"bins: need at least 2 bins, got {bins}")
        previous = 0
        for lo, hi in bins:
            if lo <= previous or (hi is not None and hi < lo):
                raise ValueError(
                    f"bins must be ascending, positive and not overlapping, got {bins}")
            if hi is None and (lo, hi) != bins[-1]:
                raise ValueError(f"only the last bin may be open-ended, got {bins}")
            previous = lo if hi is None else hi
        self.bins = bins
        self.min_class_size = min_class_size

    @staticmethod
    def bin_label(lo, hi):
        return f"{lo}+" if hi is None else f"{lo}-{hi}"

    def label_of(self, n_words):
        """The bin label of a sentence of `n_words` words, or None."""
        for lo, hi in self.bins:
            if n_words >= lo and (hi is None or n_words <= hi):
                return self.bin_label(lo, hi)
        return None

    def details(self):
        return "Bins: " + ", ".join(self.bin_label(lo, hi) for lo, hi in self.bins) + "."

    def examples(self, sentences, rng, parsed=None):
        texts, labels = [], []
        for sentence in sentences:
            label = self.label_of(sum(map(is_word, tokenize_words(sentence))))
            if label is not None:
                texts.append(sentence)
                labels.append(label)
        return texts, labels


class WordContent(ProbingBuilder):
    """WC: which of a set of mid-frequency words the sentence contains.

    Conneau et al. (2018) chose 1000 mid-frequency words of their corpus and
    kept the sentences containing exactly one of them; the label is that
    word. For our small corpora the words come from the corpus's own
    ranking: candidates are lower-cased alphabetic words of at least
    `min_length` letters, ranked by the number of sentences containing them
    (ties alphabetically); the `skip_top` most frequent are skipped (they
    are function words and the corpus's topic words) and the next
    `num_words` are chosen. A sentence is kept when it contains exactly one
    chosen word, exactly once. A chosen word left with fewer than
    `min_sentences` kept sentences is replaced by the next candidate, until
    every chosen word has enough (or the candidates run out), so the result
    depends on the corpus only.

    Args:
        num_words: int. Number of words (classes), default 30.
        skip_top: int. Most frequent candidates skipped, default 100.
        min_sentences: int. Kept sentences a word needs, default 10.
        min_length: int. Shortest candidate word, default 3.

    Examples:

    ```python
    builder = WordContent(num_words=30)
    builder.choose_words(sentences)  # ['actor', 'beautiful', ...]
    ```
    """

    name = "word_content"
    description = (
        "**WC** (Conneau et al. 2018): the label is the one word of a chosen "
        "set that the sentence contains. Conneau chose 1000 mid-frequency "
        "words; for a small corpus we rank its lower-cased alphabetic words of "
        "3+ letters by the number of sentences containing them (ties "
        "alphabetically), skip the 100 most frequent and choose the next 30. A "
        "sentence is kept when it contains exactly one chosen word, exactly "
        "once (case-insensitive). A word left with fewer than 10 kept "
        "sentences is replaced by the next candidate, until all chosen words "
        "have enough, so the words depend on the corpus only. Classes are "
        "balanced by downsampling to the smallest. The text is the sentence "
        "as given.")

    def __init__(self, num_words=30, skip_top=100, min_sentences=10, min_length=3):
        if num_words < 2:
            raise ValueError(f"num_words must be >= 2, got {num_words}")
        self.num_words = num_words
        self.skip_top = skip_top
        self.min_sentences = min_sentences
        self.min_length = min_length
        self.min_class_size = 1

    def details(self):
        return (f"Settings: num_words={self.num_words}, skip_top={self.skip_top}, "
                f"min_sentences={self.min_sentences}, min_length={self.min_length}.")

    def _word_counts(self, sentences):
        counts = []
        for sentence in sentences:
            counts.append(collections.Counter(
                t.lower() for t in tokenize_words(sentence)
                if t.isalpha() and len(t) >= self.min_length))
        return counts

    def choose_words(self, sentences):
        """The chosen words (sorted), from the corpus's own frequencies.

        Args:
            sentences: list of str.

        Examples:

        ```python
        WordContent(num_words=3, skip_top=0, min_sentences=1).choose_words(
            ["the cat sat", "the dog ran", "a cat ran"])  # ['cat', 'dog', 'ran']
        ```
        """
        return sorted(self._choose(self._word_counts(sentences)))

    def _choose(self, counts):
        doc_freq = collections.Counter()
        for c in counts:
            doc_freq.update(c.keys())
        ranked = sorted(doc_freq, key=lambda w: (-doc_freq[w], w))
        candidates = [w for w in ranked[self.skip_top:]
                      if doc_freq[w] >= self.min_sentences]
        chosen = []
        nxt = 0
        while True:
            while len(chosen) < self.num_words and nxt < len(candidates):
                chosen.append(candidates[nxt])
                nxt += 1
            kept = collections.Counter(
                label for label in map(lambda c: self._label(c, chosen), counts)
                if label is not None)
            short = [w for w in chosen if kept[w] < self.min_sentences]
            if not short:
                return chosen
            chosen = [w for w in chosen if w not in short]

    @staticmethod
    def _label(count, chosen):
        present = [w for w in chosen if w in count]
        if len(present) == 1 and count[present[0]] == 1:
            return present[0]
        return None

    def examples(self, sentences, rng, parsed=None):
        counts = self._word_counts(sentences)
        chosen = self._choose(counts)
        texts, labels = [], []
        for sentence, count in zip(sentences, counts):
            label = self._label(count, chosen)
            if label is not None:
                texts.append(sentence)
                labels.append(label)
        return texts, labels


class BigramShift(ProbingBuilder):
    """BShift: whether two adjacent words were swapped.

    Conneau et al. (2018) "invert two random consecutive words". For each
    sentence of at least `min_words` words (in order), a coin is drawn:
    `rng.random() < 0.5` inverts it, at the position
    `positions[rng.integers(len(positions))]`, where `positions` are the
    indices `i` such that tokens `i` and `i + 1` are both words, differ
    (case-insensitively), and neither is the sentence's first word (moving
    it would give the inversion away by its capital letter). A sentence with
    no such position is dropped before any draw. Both classes' texts are the
    tokens joined with single spaces, so spacing cannot tell them apart.

    Args:
        min_words: int. Shortest sentence used, in words (default 4).

    Examples:

    >>> import numpy as np
    >>> BigramShift().examples(["Go , go , go now ."],
    ...                        np.random.default_rng(2))
    (['Go , go , now go .'], ['I'])
    """

    name = "bigram_shift"
    description = (
        "**BShift** (Conneau et al. 2018): label `I` when two adjacent words "
        "were swapped, `O` for the original. Each sentence of 4+ words is "
        "inverted with probability 0.5 (seeded), at a random position where "
        "both tokens are words (no punctuation), differ, and the first is not "
        "the sentence's first word (its capital letter would give the swap "
        "away). Both classes' texts are the tokens joined with single spaces, "
        "so spacing cannot give the swap away. Classes are balanced by "
        "downsampling.")

    def __init__(self, min_words=4):
        self.min_words = min_words

    def details(self):
        return f"Settings: min_words={self.min_words}."

    @staticmethod
    def positions(tokens):
        """Indices `i` where tokens `i`, `i + 1` may be swapped."""
        word_at = [i for i, t in enumerate(tokens) if is_word(t)]
        if not word_at:
            return []
        first = word_at[0]
        return [i for i in range(first + 1, len(tokens) - 1)
                if is_word(tokens[i]) and is_word(tokens[i + 1])
                and tokens[i].lower() != tokens[i + 1].lower()]

    def examples(self, sentences, rng, parsed=None):
        texts, labels = [], []
        for sentence in sentences:
            tokens = tokenize_words(sentence)
            if sum(map(is_word, tokens)) < self.min_words:
                continue
            positions = self.positions(tokens)
            if not positions:
                continue
            if rng.random() < 0.5:
                i = positions[int(rng.integers(len(positions)))]
                tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
                labels.append("I")
            else:
                labels.append("O")
            texts.append(" ".join(tokens))
        return texts, labels
