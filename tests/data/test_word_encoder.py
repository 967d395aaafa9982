import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug import DataError
from kdplug import testing
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.data import WordEncoder
from kdplug.data.word_encoder import add_word_features
from kdplug.data.word_encoder import word_dataset

PAIRS = Examples(
    texts=["good movie", "bad film , very bad", "the plot was fun", "awful acting"],
    labels=np.array([1, 0, 1, 0], "int32"),
    pairs=["great film", "a boring movie", "the plot was dull", "superb acting !"],
)


def test_vocabulary_from_both_texts_and_encoding():
    words = WordEncoder.from_examples(PAIRS, sequence_length=4)
    # counts over both columns: bad 2, film 2, movie 2, acting 2, plot 2,
    # the 2, was 2, then single words alphabetically
    assert words.tokenizer.vocabulary[:9] == [
        "[PAD]", "[UNK]", "acting", "bad", "film", "movie", "plot", "the", "was"]
    assert "superb" in words.tokenizer.vocabulary  # second texts count too
    features = words.features(PAIRS)
    assert sorted(features) == ["word_ids", "word_ids_b", "word_padding_mask",
                                "word_padding_mask_b"]
    ids = features["word_ids"]
    assert ids.shape == (4, 4) and ids.dtype == np.int32
    np.testing.assert_array_equal(ids[0], [words.tokenizer.encode("good")[0], 5, 0, 0])
    np.testing.assert_array_equal(ids[1], [3, 4, words.tokenizer.encode(",")[0],
                                           words.tokenizer.encode("very")[0]])  # truncated
    np.testing.assert_array_equal(features["word_padding_mask"][0], [1, 1, 0, 0])
    np.testing.assert_array_equal(features["word_padding_mask_b"][3], [1, 1, 1, 0])
    assert words.tokenizer.decode(features["word_ids_b"][2]) == "the plot was dull"
    single = words.features(Examples(["good bad"], np.array([1], "int32")))
    assert sorted(single) == ["word_ids", "word_padding_mask"]
    unknown = words.encode(["zebra movie"])["word_ids"][0]
    np.testing.assert_array_equal(unknown, [1, 5, 0, 0])


def test_vocabulary_cap_bounds_every_id_and_round_trips(tmp_path):
    words = WordEncoder.from_examples(PAIRS, sequence_length=6, max_vocabulary_size=6)
    assert words.vocabulary_size == 6
    assert words.features(PAIRS)["word_ids"].max() < 6
    path = str(tmp_path / "run" / "word_vocabulary.json")
    words.save(path)
    loaded = WordEncoder.load(path)
    assert loaded.tokenizer.vocabulary == words.tokenizer.vocabulary
    assert loaded.sequence_length == 6
    clone = WordEncoder.from_config(words.get_config())
    np.testing.assert_array_equal(clone.features(PAIRS)["word_ids_b"],
                                  words.features(PAIRS)["word_ids_b"])
    with pytest.raises(DataError, match="sequence_length"):
        WordEncoder(words.tokenizer, 0)
    with pytest.raises(DataError, match="second texts"):
        words.encode(["a", "b"], ["c"])


def toy_text_encoder(sequence_length=16):
    vocabulary = testing.toy_vocabulary()
    vocabulary += [w for w in ("great", "boring", "!", ",", "superb")
                   if w not in vocabulary]
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=vocabulary)
    return TextEncoder(tokenizer, sequence_length)


def test_word_dataset_keeps_teacher_and_student_ids_of_one_example_together():
    encoder = toy_text_encoder()
    words = WordEncoder.from_examples(PAIRS, sequence_length=8)
    extra = {"teacher/logits": np.arange(8, dtype="float32").reshape(4, 2)}
    ds = word_dataset(encoder, words, PAIRS, batch_size=3, shuffle=True, seed=1,
                      extra=extra)
    seen = []
    for x, y in ds:
        assert set(x) == {"token_ids", "segment_ids", "padding_mask", "word_ids",
                          "word_padding_mask", "word_ids_b", "word_padding_mask_b",
                          "teacher/logits"}
        for row in range(len(y)):
            # WordPiece ids of "[CLS] a [SEP] b [SEP]" vs the word ids of a and b
            token_ids = x["token_ids"][row].numpy()
            segments = x["segment_ids"][row].numpy()
            real = token_ids[x["padding_mask"][row].numpy() == 1]
            text = encoder.tokenizer.detokenize(real[1:-1])
            text = text if isinstance(text, str) else text.numpy().decode()
            first = words.tokenizer.decode(x["word_ids"][row].numpy())
            second = words.tokenizer.decode(x["word_ids_b"][row].numpy())
            index = PAIRS.texts.index(first)
            assert PAIRS.pairs[index] == second
            assert text.replace("[SEP]", "|").split(" | ") == [first, second]
            assert segments.max() == 1  # the teacher reads the pair via segments
            assert int(y[row]) == PAIRS.labels[index]
            np.testing.assert_array_equal(x["teacher/logits"][row], extra["teacher/logits"][index])
            seen.append(index)
    assert sorted(seen) == [0, 1, 2, 3]


def test_add_word_features_maps_raw_text_datasets():
    words = WordEncoder.from_examples(PAIRS, sequence_length=5)
    expected = words.features(PAIRS)
    raw = tf.data.Dataset.from_tensor_slices(
        ({"text": PAIRS.texts, "pair": PAIRS.pairs}, PAIRS.labels))
    batched = add_word_features(raw.batch(3), words, keep_text=False)
    x, y = next(iter(batched))
    assert set(x) == set(expected)
    assert x["word_ids"].shape == (3, 5) and x["word_ids"].dtype == tf.int32
    for key, value in expected.items():
        np.testing.assert_array_equal(x[key], value[:3])
    single = add_word_features(raw.map(lambda f, _: f), words)
    element = next(iter(single))
    assert element["word_ids"].shape == (5,)
    np.testing.assert_array_equal(element["word_ids_b"], expected["word_ids_b"][0])
    assert element["text"].numpy().decode() == PAIRS.texts[0]  # kept by default
    with pytest.raises(DataError, match="'sentence'"):
        add_word_features(raw, words, text_key="sentence")
