import collections
import re

import keras
import numpy as np

PAD = "[PAD]"
UNK = "[UNK]"
_WORD = re.compile(r"\[[A-Z]+\]|\w+|[^\w\s]", re.UNICODE)
_SPECIAL = re.compile(r"\[[A-Z]+\]")


@keras.saving.register_keras_serializable(package="kdplug")
class WordTokenizer:
    """A tiny word-level tokenizer with its own vocabulary (for BiLSTMs).

    Text is optionally lower-cased and split into runs of word characters
    and single punctuation marks. Id 0 is `[PAD]`, id 1 is `[UNK]`; the other
    ids are words by decreasing frequency (ties alphabetically), so a
    vocabulary built from the same texts is always the same.

    Args:
        vocabulary: list of words; the first two must be `[PAD]`, `[UNK]`
            (they are added when missing).
        lowercase: bool.

    Examples:

    ```python
    tok = WordTokenizer.from_texts(train_texts, max_vocabulary_size=20000)
    batch = tok(["a fine film", "dull"], sequence_length=8)
    batch["word_ids"].shape  # (2, 8); batch["word_padding_mask"] too
    tok2 = WordTokenizer.from_config(tok.get_config())
    ```
    """

    def __init__(self, vocabulary=(), lowercase=True):
        words = [w for w in vocabulary if w not in (PAD, UNK)]
        self.vocabulary = [PAD, UNK, *words]
        self.lowercase = bool(lowercase)
        self._ids = {w: i for i, w in enumerate(self.vocabulary)}

    @classmethod
    def from_texts(cls, texts, max_vocabulary_size=None, min_count=1,
                   lowercase=True):
        """Builds the vocabulary from an iterable of strings.

        Args:
            texts: iterable of str.
            max_vocabulary_size: int or None. Cap including `[PAD]`, `[UNK]`.
            min_count: int. Words seen fewer times map to `[UNK]`.
            lowercase: bool.
        """
        splitter = cls(lowercase=lowercase)
        counts = collections.Counter()
        for text in texts:
            counts.update(splitter.split(text))
        words = sorted(
            (w for w, c in counts.items() if c >= min_count),
            key=lambda w: (-counts[w], w),
        )
        if max_vocabulary_size is not None:
            words = words[: max(0, int(max_vocabulary_size) - 2)]
        return cls(words, lowercase=lowercase)

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def split(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        words = _WORD.findall(text)
        if self.lowercase:  # special tokens such as [MASK] keep their case
            words = [w if _SPECIAL.fullmatch(w) else w.lower() for w in words]
        return words

    def encode(self, text):
        """Word ids of one text (no padding or truncation)."""
        return [self._ids.get(w, 1) for w in self.split(text)]

    def decode(self, ids):
        return " ".join(self.vocabulary[int(i)] for i in ids if int(i) != 0)

    def __call__(self, texts, sequence_length, suffix=""):
        """Pads/truncates to `sequence_length`.

        Returns `{"word_ids" + suffix, "word_padding_mask" + suffix}` int32
        arrays of shape `(len(texts), sequence_length)`; use `suffix="_b"`
        for the second sentence of a pair.
        """
        ids = np.zeros((len(texts), int(sequence_length)), dtype="int32")
        for row, text in enumerate(texts):
            encoded = self.encode(text)[: int(sequence_length)]
            ids[row, : len(encoded)] = encoded
        return {
            "word_ids" + suffix: ids,
            "word_padding_mask" + suffix: (ids != 0).astype("int32"),
        }

    def get_config(self):
        return {"vocabulary": list(self.vocabulary), "lowercase": self.lowercase}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
