"""What every probing-set builder shares: word tokenisation, the builder base
class, de-duplication and class balancing."""

import collections
import re

# A word is a run of letters, digits and underscores, with inner apostrophes
# and hyphens kept ("don't", "he's", "well-made"); every other non-space
# character is a token of its own.
WORD_TOKENS = re.compile(r"\w+(?:['\u2019-]\w+)*|[^\w\s]")
_WORD = re.compile(r"\w")


def tokenize_words(text):
    """Splits a sentence into word and punctuation tokens.

    A word is a run of letters, digits and underscores with inner
    apostrophes and hyphens kept (`"don't"`, `"he's"`, `"well-made"` are one
    word each); every other non-space character (`.`, `,`, `"`, a lone `'`)
    is a punctuation token of its own. `is_word` tells them apart.

    Args:
        text: str. A sentence.

    Returns a list of str tokens.

    Examples:

    >>> tokenize_words("It's a well-made film, isn't it?")
    ["It's", 'a', 'well-made', 'film', ',', "isn't", 'it', '?']
    """
    return WORD_TOKENS.findall(text)


def is_word(token):
    """Whether a `tokenize_words` token is a word (not punctuation).

    Examples:

    >>> is_word("film"), is_word("21st"), is_word(",")
    (True, True, False)
    """
    return bool(_WORD.match(token))


class ProbingBuilder:
    """Base class of a probing-set builder: turns sentences into labelled
    examples for one task.

    A subclass sets `name`, `needs_parser`, `description` (a Markdown
    paragraph, used in the docs and saved with the set) and implements
    `examples`; `build` adds the shared de-duplication and class balancing.
    `build_probing_task` does the rest (caps, splits, checks sizes).

    Attributes:
        name: str. The task name.
        needs_parser: bool. Whether `examples` reads dependency parses (the
            labels are then silver).
        balanced: bool. Whether classes are downsampled to equal sizes.
        min_class_size: int. Before balancing, a class with fewer examples
            is dropped rather than shrinking every class to its size.

    Examples:

    ```python
    class Questions(ProbingBuilder):
        name = "question"
        description = "Label `Q` when the sentence ends with `?`."

        def examples(self, sentences, rng, parsed=None):
            return list(sentences), ["Q" if s.endswith("?") else "S" for s in sentences]
    ```
    """

    name = ""
    needs_parser = False
    balanced = True
    min_class_size = 1
    description = ""

    def examples(self, sentences, rng, parsed=None):
        """The task's examples before de-duplication and balancing.

        Args:
            sentences: list of str.
            rng: a `numpy.random.Generator` (for the tasks that draw).
            parsed: list of `ParsedSentence` aligned with `sentences` (only
                for builders with `needs_parser`).

        Returns `(texts, labels)`, two lists of str of the same length.
        """
        raise NotImplementedError

    def details(self):
        """One sentence on this instance's settings (appended to the built
        set's description); empty when there is nothing to say."""
        return ""

    def build(self, sentences, rng, parsed=None, max_per_class=None):
        """The task's examples, de-duplicated and (when `balanced`) balanced.

        Args:
            sentences: list of str.
            rng: a `numpy.random.Generator`.
            parsed: list of `ParsedSentence` aligned with `sentences`, for a
                builder that `needs_parser`.
            max_per_class: int. At most this many examples per class.

        Returns `(texts, labels)`: flat lists (`build_probing_task` splits
        them).

        Examples:

        ```python
        texts, labels = BUILDERS["sentence_length"].build(
            sentences, numpy.random.default_rng(0))
        ```
        """
        if self.needs_parser:
            check_parsed(self.name, sentences, parsed)
        texts, labels = self.examples(sentences, rng, parsed)
        texts, labels = deduplicate(texts, labels)
        if self.balanced:
            texts, labels = balance(texts, labels, rng, max_per_class,
                                    self.min_class_size)
        elif max_per_class is not None:
            texts, labels = balance(texts, labels, rng, max_per_class, 1,
                                    equal=False)
        return texts, labels

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"


def check_parsed(name, sentences, parsed):
    if parsed is None:
        raise ValueError(f"probing task {name!r} needs parsed sentences "
                         "(parsed=[ParsedSentence, ...])")
    if len(parsed) != len(sentences):
        raise ValueError(f"probing task {name!r}: {len(parsed)} parses for "
                         f"{len(sentences)} sentences")


def deduplicate(texts, labels):
    """Keeps the first copy of each text; a text seen with two different
    labels is dropped altogether (it would teach nothing, and a copy in train
    and one in test would leak).

    Examples:

    >>> deduplicate(["a", "b", "a", "c", "c"], ["1", "2", "1", "3", "4"])
    (['a', 'b'], ['1', '2'])
    """
    seen = {}
    for text, label in zip(texts, labels):
        seen.setdefault(text, set()).add(label)
    kept_texts, kept_labels, done = [], [], set()
    for text, label in zip(texts, labels):
        if len(seen[text]) == 1 and text not in done:
            done.add(text)
            kept_texts.append(text)
            kept_labels.append(label)
    return kept_texts, kept_labels


def balance(texts, labels, rng, max_per_class=None, min_class_size=1,
            equal=True):
    """Downsamples every class to the size of the smallest one (and to
    `max_per_class`), drawing with `rng`; classes with fewer than
    `min_class_size` examples are dropped first. The order of the kept
    examples is their input order.

    Args:
        texts: list of str.
        labels: list of str, aligned with `texts`.
        rng: a `numpy.random.Generator`.
        max_per_class: int or None. At most this many per class.
        min_class_size: int. Smaller classes are dropped.
        equal: bool. False only caps at `max_per_class` (no equalising).

    Examples:

    >>> import numpy as np
    >>> balance(["a", "b", "c", "d"], ["x", "x", "x", "y"],
    ...         np.random.default_rng(0))[1]
    ['x', 'y']
    """
    by_label = collections.defaultdict(list)
    for i, label in enumerate(labels):
        by_label[label].append(i)
    classes = {k: v for k, v in sorted(by_label.items()) if len(v) >= min_class_size}
    if not classes:
        return [], []
    size = min(len(v) for v in classes.values()) if equal else None
    if max_per_class is not None:
        size = max_per_class if size is None else min(size, max_per_class)
    keep = []
    for label, indices in classes.items():
        if size is None or len(indices) <= size:
            keep.extend(indices)
        else:
            keep.extend(rng.choice(indices, size=size, replace=False).tolist())
    keep.sort()
    return [texts[i] for i in keep], [labels[i] for i in keep]
