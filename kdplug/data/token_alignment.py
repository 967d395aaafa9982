"""Word labels on WordPiece positions, for token classification.

A tagged sentence is a list of words with one label each; a BERT model reads
word pieces. Each word is split into pieces by the teacher's keras-hub
WordPiece tokenizer and packed as `kdplug.data.TextEncoder` packs a text,
`[CLS] pieces [SEP]` padded (or truncated) to `sequence_length`; the first
piece of every word carries the word's label and every other position `-1`
(what `kdplug.terms.TokenHardCrossEntropy`, `TokenSoftCrossEntropy` and
`kdplug.evaluation.token_metrics` skip).
"""

import dataclasses

import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug.errors import DataError

IGNORED = -1


@dataclasses.dataclass
class AlignedWords:
    """Encoded examples and their per-piece labels.

    Attributes:
        features: `{token_ids, segment_ids, padding_mask}`, int32 arrays
            `(n, sequence_length)` (`(sequence_length,)` for one example).
        labels: int32, same shape: the word's label on its first piece,
            `-1` elsewhere.
        truncated_words: int. Words whose first piece fell beyond
            `sequence_length - 2` pieces: they have no labelled position.
            (A word whose first piece fits keeps its label even when its
            later pieces are cut.)
        empty_words: int. Words the tokenizer turned into no piece at all
            (e.g. control characters): they have no labelled position.
    """

    features: dict
    labels: np.ndarray
    truncated_words: int = 0
    empty_words: int = 0

    @property
    def dropped_words(self):
        """Words without a labelled position (truncated or empty)."""
        return self.truncated_words + self.empty_words


def align_word_label_batch(tokenizer, words, labels, sequence_length,
                           chunk_size=65536):
    """Encodes many tagged sentences (see `align_word_labels`).

    Every word of every example is tokenised on its own, `chunk_size`
    words per tokenizer call. Splitting on whitespace and punctuation
    comes first in WordPiece, so the pieces are the ones `TextEncoder`
    gives the words joined by spaces.

    Args:
        tokenizer: a keras-hub `WordPieceTokenizer` (e.g. the teacher's
            `BertTokenizer`) with `[CLS]`, `[SEP]` and `[PAD]` tokens.
        words: a list of examples, each a non-empty list of str.
        labels: a list of examples, each a list of int label ids, one per
            word.
        sequence_length: int (>= 3). Padded length in pieces, [CLS] and
            [SEP] included.
        chunk_size: int. Words per tokenizer call.

    Returns:
        An `AlignedWords` with `(len(words), sequence_length)` arrays and
        the counts of dropped words over all examples.

    Raises:
        DataError: no example, an example without words, or a label count
            that differs from the word count.

    Examples:

    ```python
    aligned = align_word_label_batch(tokenizer, [["The", "Rock"], ["Hi"]],
                                     [[0, 1], [0]], sequence_length=16)
    aligned.features["token_ids"].shape  # (2, 16)
    if aligned.dropped_words:
        log.info("%d words truncated", aligned.dropped_words)
    ```
    """
    sequence_length = int(sequence_length)
    if sequence_length < 3:
        raise ValueError(f"sequence_length must be >= 3, got {sequence_length}")
    _check_examples(words, labels)
    counts, flat_ids = _word_pieces(tokenizer, [w for ex in words for w in ex],
                                    chunk_size)
    n = len(words)
    token_ids = np.full((n, sequence_length), tokenizer.pad_token_id, "int32")
    piece_labels = np.full((n, sequence_length), IGNORED, "int32")
    truncated = empty = 0
    capacity = sequence_length - 2
    word_start = piece_start = 0
    for row, example_labels in enumerate(labels):
        lengths = counts[word_start:word_start + len(example_labels)]
        total = int(lengths.sum())
        pieces = flat_ids[piece_start:piece_start + total][:capacity]
        token_ids[row, 0] = tokenizer.cls_token_id
        token_ids[row, 1:1 + len(pieces)] = pieces
        token_ids[row, 1 + len(pieces)] = tokenizer.sep_token_id
        first = 1 + np.cumsum(lengths) - lengths
        kept = (lengths > 0) & (first <= capacity)
        piece_labels[row, first[kept]] = np.asarray(example_labels)[kept]
        truncated += int(np.sum((lengths > 0) & ~kept))
        empty += int(np.sum(lengths == 0))
        word_start += len(example_labels)
        piece_start += total
    features = {
        keys.TOKEN_IDS: token_ids,
        keys.SEGMENT_IDS: np.zeros_like(token_ids),
        keys.PADDING_MASK: (token_ids != tokenizer.pad_token_id).astype("int32"),
    }
    return AlignedWords(features, piece_labels, truncated, empty)


def align_word_labels(tokenizer, words, labels, sequence_length):
    """Encodes one tagged sentence: `[CLS] pieces [SEP]`, padded or truncated
    to `sequence_length`, and its labels on the first piece of each word.

    Args:
        tokenizer: a keras-hub `WordPieceTokenizer` (the teacher's).
        words: a non-empty list of str.
        labels: one int label id per word.
        sequence_length: int. Padded length in pieces.

    Returns:
        An `AlignedWords` with `(sequence_length,)` arrays.

    Examples:

    ```python
    # vocabulary: ..., "the", "rock", "##y", ...
    aligned = align_word_labels(tokenizer, ["The", "Rocky"], [0, 3], 6)
    # token_ids: [CLS] the rock ##y [SEP] [PAD]
    aligned.labels  # [-1, 0, 3, -1, -1, -1]
    ```
    """
    batch = align_word_label_batch(tokenizer, [words], [labels], sequence_length)
    return AlignedWords({k: v[0] for k, v in batch.features.items()},
                        batch.labels[0], batch.truncated_words, batch.empty_words)


def _check_examples(words, labels):
    if len(words) != len(labels):
        raise DataError(
            f"{len(words)} word lists but {len(labels)} label lists: one per example")
    if not len(words):
        raise DataError("no example to align: the word lists are empty")
    for i, (example_words, example_labels) in enumerate(zip(words, labels)):
        if isinstance(example_words, str):
            raise DataError(
                f"example {i}: words must be a list of words, got the string "
                f"{example_words[:40]!r}")
        if not len(example_words):
            raise DataError(
                f"example {i} has no words: a tagged sentence needs at least one")
        if len(example_words) != len(example_labels):
            raise DataError(
                f"example {i} has {len(example_words)} words but "
                f"{len(example_labels)} labels")


def _word_pieces(tokenizer, words, chunk_size):
    """`(pieces per word, all piece ids concatenated)` as numpy arrays."""
    counts, ids = [], []
    for start in range(0, len(words), chunk_size):
        pieces = tokenizer(tf.constant(words[start:start + chunk_size], tf.string))
        if isinstance(pieces, tf.RaggedTensor):
            counts.append(pieces.row_lengths().numpy())
            ids.append(pieces.flat_values.numpy())
        else:  # eager keras-hub returns python lists of ids
            counts.append(np.array([len(p) for p in pieces], "int64"))
            ids.append(np.array([i for p in pieces for i in p], "int64"))
    return np.concatenate(counts).astype("int64"), np.concatenate(ids).astype("int32")
