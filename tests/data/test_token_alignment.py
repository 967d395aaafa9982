import keras_hub
import numpy as np
import pytest

from kdplug.data.text_encoder import TextEncoder
from kdplug.data.token_alignment import align_word_label_batch
from kdplug.data.token_alignment import align_word_labels
from kdplug.errors import DataError

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
              "the", "rock", "##y", "film", "un", "##believ", "##able", "."]
PAD, UNK, CLS, SEP = 0, 1, 2, 3
THE, ROCK, Y, FILM, UN, BELIEV, ABLE, DOT = 5, 6, 7, 8, 9, 10, 11, 12


@pytest.fixture(scope="module")
def tokenizer():
    return keras_hub.tokenizers.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)


def test_first_piece_of_each_word_carries_its_label(tokenizer):
    aligned = align_word_labels(tokenizer, ["The", "Rocky", "unbelievable", "film", "."],
                                [4, 1, 2, 0, 3], sequence_length=10)
    np.testing.assert_array_equal(
        aligned.features["token_ids"],
        [CLS, THE, ROCK, Y, UN, BELIEV, ABLE, FILM, DOT, SEP])
    np.testing.assert_array_equal(aligned.labels, [-1, 4, 1, -1, 2, -1, -1, 0, 3, -1])
    np.testing.assert_array_equal(aligned.features["padding_mask"], [1] * 10)
    np.testing.assert_array_equal(aligned.features["segment_ids"], [0] * 10)
    assert aligned.truncated_words == aligned.empty_words == 0


def test_pieces_are_those_of_the_text_encoder(tokenizer):
    words = ["the", "Rocky", "film", "."]
    aligned = align_word_labels(tokenizer, words, [0, 1, 2, 3], 8)
    encoded = TextEncoder(tokenizer, 8)(np.array([" ".join(words)]))
    for key, value in encoded.items():
        np.testing.assert_array_equal(aligned.features[key], np.asarray(value)[0])


def test_batch_pads_truncates_and_counts_dropped_words(tokenizer):
    words = [["film"], ["the", "unbelievable", "rocky", "film"], ["Zzz", "the"]]
    labels = [[5], [1, 2, 3, 4], [6, 7]]
    aligned = align_word_label_batch(tokenizer, words, labels, sequence_length=6)
    ids = aligned.features["token_ids"]
    assert ids.shape == aligned.labels.shape == (3, 6)
    assert ids.dtype == aligned.labels.dtype == np.int32
    np.testing.assert_array_equal(ids[0], [CLS, FILM, SEP, PAD, PAD, PAD])
    np.testing.assert_array_equal(aligned.labels[0], [-1, 5, -1, -1, -1, -1])
    np.testing.assert_array_equal(aligned.features["padding_mask"][0], [1, 1, 1, 0, 0, 0])
    # 4 piece slots: "rocky" keeps its first piece (label 3) though "##y" is
    # cut; "film" starts beyond them: truncated, no labelled position
    np.testing.assert_array_equal(ids[1], [CLS, THE, UN, BELIEV, ABLE, SEP])
    np.testing.assert_array_equal(aligned.labels[1], [-1, 1, 2, -1, -1, -1])
    assert aligned.truncated_words == 2
    # an unknown word is one [UNK] piece and keeps its label
    np.testing.assert_array_equal(ids[2], [CLS, UNK, THE, SEP, PAD, PAD])
    np.testing.assert_array_equal(aligned.labels[2], [-1, 6, 7, -1, -1, -1])
    assert aligned.empty_words == 0 and aligned.dropped_words == 2


def test_word_without_pieces_is_counted(tokenizer):
    aligned = align_word_labels(tokenizer, ["the", "\u200b", "film"], [1, 2, 3], 6)
    np.testing.assert_array_equal(aligned.features["token_ids"],
                                  [CLS, THE, FILM, SEP, PAD, PAD])
    np.testing.assert_array_equal(aligned.labels, [-1, 1, 3, -1, -1, -1])
    assert aligned.empty_words == 1 and aligned.truncated_words == 0


def test_malformed_examples_are_explained(tokenizer):
    with pytest.raises(DataError, match="example 1 has no words"):
        align_word_label_batch(tokenizer, [["film"], []], [[0], []], 6)
    with pytest.raises(DataError, match="example 0 has 2 words but 1 labels"):
        align_word_labels(tokenizer, ["the", "film"], [0], 6)
    with pytest.raises(DataError, match="no example"):
        align_word_label_batch(tokenizer, [], [], 6)
    with pytest.raises(DataError, match="list of words"):
        align_word_labels(tokenizer, "the film", [0, 1], 6)
    with pytest.raises(ValueError, match="sequence_length"):
        align_word_labels(tokenizer, ["film"], [0], 2)
