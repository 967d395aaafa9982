"""Word-level ids for students with their own vocabulary (e.g. BiLSTMs)."""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug.errors import DataError
from kdplug.models.word_tokenizer import WordTokenizer


@keras.saving.register_keras_serializable(package="kdplug")
class WordEncoder:
    """Holds a `WordTokenizer` vocabulary and adds word ids to feature dicts.

    The teacher reads the WordPiece `token_ids` that `kdplug.data.TextEncoder`
    produces; a student with its own vocabulary (`input: word_ids`) reads
    `word_ids` / `word_padding_mask`, and for sentence pairs also
    `word_ids_b` / `word_padding_mask_b` (the second text, encoded on its
    own). `features(examples)` returns those as per-example arrays to pass as
    `extra=` to `TextEncoder.dataset()` (so both id sets travel in the same
    batch and are shuffled together); `word_dataset()` does exactly that, and
    `add_word_features()` maps a `tf.data` dataset that still carries the raw
    texts.

    Ids are int32, `0` is padding and `1` unknown; texts are truncated to
    `sequence_length` words. Masks are int32 `(ids != 0)`.

    Args:
        tokenizer: a `kdplug.models.WordTokenizer`.
        sequence_length: int. Padded length in words.

    Examples:

    ```python
    words = WordEncoder.from_examples(splits["train"], sequence_length=64,
                                      max_vocabulary_size=20000)
    train_ds = word_dataset(text_encoder, words, splits["train"], 32,
                            shuffle=True)
    words.save(os.path.join(run_dir, "word_vocabulary.json"))
    ```
    """

    def __init__(self, tokenizer, sequence_length):
        if isinstance(tokenizer, dict):
            tokenizer = WordTokenizer.from_config(tokenizer)
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        if self.sequence_length < 1:
            raise DataError(
                f"word sequence_length must be >= 1, got {sequence_length}")

    @classmethod
    def from_texts(cls, texts, sequence_length, max_vocabulary_size=None,
                   min_count=1, lowercase=True):
        """Builds the vocabulary from an iterable of strings.

        Args:
            texts: iterable of str.
            sequence_length: int.
            max_vocabulary_size: int or None. Cap including `[PAD]` and
                `[UNK]`; every id is below it, so it can be the student's
                embedding size.
            min_count: int. Rarer words map to `[UNK]`.
            lowercase: bool.
        """
        tokenizer = WordTokenizer.from_texts(
            texts, max_vocabulary_size=max_vocabulary_size,
            min_count=min_count, lowercase=lowercase)
        return cls(tokenizer, sequence_length)

    @classmethod
    def from_examples(cls, examples, sequence_length, max_vocabulary_size=None,
                      min_count=1, lowercase=True):
        """Builds the vocabulary from `Examples` (both texts of pairs).

        Build it from the training split only, so evaluation words unseen in
        training map to `[UNK]` as they would in deployment.
        """
        texts = list(examples.texts)
        if examples.pairs is not None:
            texts += list(examples.pairs)
        return cls.from_texts(texts, sequence_length, max_vocabulary_size,
                              min_count, lowercase)

    @property
    def vocabulary_size(self):
        return self.tokenizer.vocabulary_size

    def encode(self, texts, pairs=None):
        """Word features of lists of texts (and their second texts).

        Returns a dict of int32 arrays `(len(texts), sequence_length)`:
        `word_ids`, `word_padding_mask`, plus `word_ids_b`,
        `word_padding_mask_b` when `pairs` is given.
        """
        texts = [_as_str(t) for t in texts]
        out = self.tokenizer(texts, self.sequence_length)
        if pairs is not None:
            pairs = [_as_str(t) for t in pairs]
            if len(pairs) != len(texts):
                raise DataError(
                    f"{len(texts)} texts but {len(pairs)} second texts")
            out.update(self.tokenizer(pairs, self.sequence_length,
                                      suffix=keys.WORD_PAIR_SUFFIX))
        return out

    def features(self, examples):
        """Per-example word features of `Examples`, for `TextEncoder.dataset(
        examples, ..., extra=word_encoder.features(examples))`.

        Memory: `2 or 4 * len(examples) * sequence_length * 4` bytes.
        """
        return self.encode(examples.texts, examples.pairs)

    def save(self, path):
        """Writes the vocabulary and settings as JSON (keep it with the
        exported student: the student's ids mean nothing without it)."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.get_config(), f, ensure_ascii=False)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls.from_config(json.load(f))

    def get_config(self):
        return {
            "tokenizer": self.tokenizer.get_config(),
            "sequence_length": self.sequence_length,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _as_str(text):
    return text.decode("utf-8") if isinstance(text, bytes) else str(text)


def word_dataset(text_encoder, word_encoder, examples, batch_size, extra=None,
                 **kwargs):
    """`text_encoder.dataset(...)` whose features also carry word ids.

    Every batch has the teacher's `token_ids` / `segment_ids` /
    `padding_mask` and the student's `word_ids` / `word_padding_mask` (and
    `_b` keys for pairs) of the same examples, in the same order.

    Args:
        text_encoder: a `kdplug.data.TextEncoder`.
        word_encoder: a `WordEncoder`.
        examples: `kdplug.data.Examples`.
        batch_size: int.
        extra: other per-example arrays (e.g. cached teacher outputs).
        **kwargs: `shuffle`, `seed`, `drop_remainder`, `length_buckets` of
            `TextEncoder.dataset`.

    Examples:

    ```python
    train_ds = word_dataset(encoder, words, splits["train"], 32,
                            shuffle=True, seed=0)
    ```
    """
    merged = dict(extra or {})
    merged.update(word_encoder.features(examples))
    return text_encoder.dataset(examples, batch_size, extra=merged, **kwargs)


def add_word_features(dataset, word_encoder, text_key=keys.TEXT, pair_key=keys.PAIR,
                      keep_text=True):
    """Maps a `tf.data` dataset whose features hold raw texts, adding word ids.

    Elements are a features dict or a `(features, ...)` tuple; the features'
    `text_key` (and, if present, `pair_key`) hold strings, batched `(batch,)`
    or single `()`. The words are split in Python (`tf.numpy_function`), so
    the ids are exactly `word_encoder.encode`'s.

    Args:
        dataset: a `tf.data.Dataset`.
        word_encoder: a `WordEncoder`.
        text_key: str. Feature holding the first text.
        pair_key: str. Feature holding the second text, if any.
        keep_text: bool. Keep the raw text features.

    Examples:

    ```python
    ds = tf.data.Dataset.from_tensor_slices(
        ({"text": texts, "pair": pairs}, labels)).batch(32)
    ds = add_word_features(ds, words)  # + word_ids, word_ids_b, masks
    ```
    """
    length = word_encoder.sequence_length

    def encode(texts, pairs=None):
        batched = np.ndim(texts) > 0
        texts = np.atleast_1d(texts)
        if pairs is not None:
            pairs = np.atleast_1d(pairs)
        out = word_encoder.encode(list(texts), None if pairs is None
                                  else list(pairs))
        if not batched:
            out = {k: v[0] for k, v in out.items()}
        return out

    def add(features):
        if text_key not in features:
            raise DataError(
                f"add_word_features: the features have no {text_key!r} "
                f"(keys: {sorted(features)})")
        has_pair = pair_key in features
        names = list(keys.WORD_INPUTS)
        if has_pair:
            names += [k + keys.WORD_PAIR_SUFFIX for k in keys.WORD_INPUTS]
        inputs = [features[text_key]] + ([features[pair_key]] if has_pair else [])

        def run(*args):
            out = encode(*args)
            return [out[k] for k in names]

        values = tf.numpy_function(run, inputs, [tf.int32] * len(names),
                                   stateful=False)
        shape = features[text_key].shape.concatenate([length])
        out = {k: v for k, v in features.items()
               if keep_text or k not in (text_key, pair_key)}
        for key, value in zip(names, values):
            value.set_shape(shape)
            out[key] = value
        return out

    def map_fn(*element):
        if len(element) == 1:
            return add(element[0])
        return (add(element[0]), *element[1:])

    return dataset.map(map_fn, num_parallel_calls=tf.data.AUTOTUNE)
