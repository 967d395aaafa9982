import keras
import numpy as np

from kdplug.models import WordTokenizer

TEXTS = ["A fine film, a FINE cast.", "Dull film.", "fine"]


def test_vocabulary_is_frequency_ordered_and_deterministic():
    tok = WordTokenizer.from_texts(TEXTS)
    # counts: fine 3, a 2, film 2, . 2, "," 1, cast 1, dull 1
    assert tok.vocabulary == ["[PAD]", "[UNK]", "fine", ".", "a", "film", ",",
                              "cast", "dull"]
    assert tok.vocabulary_size == 9
    assert WordTokenizer.from_texts(list(reversed(TEXTS))).vocabulary == tok.vocabulary
    capped = WordTokenizer.from_texts(TEXTS, max_vocabulary_size=4)
    assert capped.vocabulary == ["[PAD]", "[UNK]", "fine", "."]
    assert WordTokenizer.from_texts(TEXTS, min_count=2).vocabulary_size == 6


def test_encode_pad_truncate_and_unknown():
    tok = WordTokenizer.from_texts(TEXTS)
    assert tok.encode("Fine, unseen film") == [2, 6, 1, 5]
    batch = tok(["fine film", "a fine film , a fine cast"], sequence_length=4)
    np.testing.assert_array_equal(batch["word_ids"], [[2, 5, 0, 0], [4, 2, 5, 6]])
    np.testing.assert_array_equal(batch["word_padding_mask"], [[1, 1, 0, 0], [1, 1, 1, 1]])
    assert batch["word_ids"].dtype == np.int32
    assert set(tok(["x"], 2, suffix="_b")) == {"word_ids_b", "word_padding_mask_b"}
    assert tok.decode([2, 5, 0]) == "fine film"


def test_config_round_trip():
    tok = WordTokenizer.from_texts(TEXTS, lowercase=False)
    again = WordTokenizer.from_config(tok.get_config())
    assert again.vocabulary == tok.vocabulary and again.lowercase is False
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(tok))
    assert isinstance(restored, WordTokenizer)
    assert restored.encode("FINE film") == tok.encode("FINE film")
