import keras_hub
import numpy as np
import tensorflow as tf

from kdplug import keys

# `encode_examples` tokenises at most this many texts eagerly, more through
# the traced `batch_encoder` (measured on 2 CPU cores, tiny tokenizers of
# each family: tracing costs 1-2 s for WordPiece and SentencePiece and 5-20 s
# for byte-level BPE, while 200 texts take 0.1-0.2 s eagerly; at 4,000 texts
# the traced function is 2-8x faster than eager ops).
EAGER_TEXTS = 1024

# Features of each sentence of a pair encoded on its own (`[CLS] x [SEP]`),
# for students that read the two sentences separately (siamese BiLSTMs).
# Suffixed `_a` / `_b` because `token_ids` is the teacher's joint encoding.


def needs_pair_inputs(model):
    """True when `model` reads per-sentence WordPiece ids (`token_ids_b`),
    i.e. its batches need `TextEncoder(..., pair_inputs=True)`."""
    return keys.PAIR_INPUTS[2] in tuple(getattr(model, "input_keys", None) or ())


class TextEncoder:
    """Tokenises text (or text pairs) into BERT inputs inside `tf.data`.

    Wraps a keras-hub tokenizer of any text family (WordPiece, BPE,
    SentencePiece) and a `MultiSegmentPacker` that adds its start and end
    tokens ([CLS]/[SEP], <s>/</s>), truncates and pads to `sequence_length`.

    For pairs the features are the teacher's joint encoding
    `[CLS] a [SEP] b [SEP]`: `token_ids`, `segment_ids` (0 for `a`, 1 for
    `b`), `padding_mask`. With `pair_inputs=True` every pair batch also
    carries each sentence encoded on its own, `[CLS] a [SEP]` and
    `[CLS] b [SEP]`, each padded to `sequence_length`: `token_ids_a`,
    `padding_mask_a`, `token_ids_b`, `padding_mask_b` (`kdplug.keys.PAIR_INPUTS`), what
    a siamese student on the teacher's vocabulary reads (`bilstm-siamese`
    with `input: token_ids`). Both come from the same tokenisation of the same
    examples, so they travel in the same (shuffled) batch. Single texts get
    no extra features.

    Args:
        tokenizer: a `keras_hub.tokenizers.WordPieceTokenizer` (e.g.
            `BertTokenizer.from_preset(dir)`).
        sequence_length: int. Padded length.
        pair_inputs: bool. Also encode each sentence of a pair on its own
            (`needs_pair_inputs(student)` says whether a student wants them).

    Examples:

    ```python
    encoder = TextEncoder(BertTokenizer.from_preset(path), 64)
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(32).map(encoder)

    pairs = TextEncoder(tokenizer, 64, pair_inputs=True)
    train_ds = pairs.dataset(splits["train"], 32, shuffle=True)
    # token_ids, segment_ids, padding_mask       (teacher: [CLS] a [SEP] b [SEP])
    # token_ids_a, padding_mask_a, token_ids_b, padding_mask_b  (siamese student)
    ```
    """

    def __init__(self, tokenizer, sequence_length, pair_inputs=False):
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.pair_inputs = bool(pair_inputs)
        self.packer = keras_hub.layers.MultiSegmentPacker(
            start_value=tokenizer.start_token_id,
            end_value=tokenizer.end_token_id,
            sep_value=_pair_separator(tokenizer),
            pad_value=tokenizer.pad_token_id,
            truncate="round_robin",
            sequence_length=self.sequence_length,
        )
        self._batch_encoders = {}

    @property
    def vocabulary_size(self):
        return self.tokenizer.vocabulary_size()

    def _padding_mask(self, token_ids):
        return tf.cast(token_ids != self.tokenizer.pad_token_id, "int32")

    def __call__(self, texts, pairs=None, pair_inputs=None):
        """Features of a batch (or one) of texts and optional second texts.

        Args:
            texts: string tensor `(batch,)` or `()`.
            pairs: second texts, same shape, or None.
            pair_inputs: overrides the encoder's `pair_inputs` for this call.
        """
        segments = [self.tokenizer(texts)]
        if pairs is not None:
            segments.append(self.tokenizer(pairs))
        token_ids, segment_ids = self.packer(tuple(segments))
        features = {
            keys.TOKEN_IDS: token_ids,
            keys.SEGMENT_IDS: segment_ids,
            keys.PADDING_MASK: self._padding_mask(token_ids),
        }
        if pair_inputs is None:
            pair_inputs = self.pair_inputs
        if pairs is not None and pair_inputs:
            for suffix, segment in zip(("_a", "_b"), segments):
                ids, _ = self.packer((segment,))
                features[keys.TOKEN_IDS + suffix] = ids
                features[keys.PADDING_MASK + suffix] = self._padding_mask(ids)
        return features

    def batch_encoder(self, paired, pair_inputs=None):
        """`self` on batches as one traced `tf.function`, built once per
        encoder and kind of input.

        Tracing the tokenizer costs 1-20 s (the family's tokenizer, the
        machine); `encode_examples()` (and so every `dataset()`) calls this
        one function for more than `EAGER_TEXTS` examples instead of tracing
        it again.

        Args:
            paired: bool. Whether batches carry second texts.
            pair_inputs: overrides the encoder's `pair_inputs`.
        """
        pair_inputs = self.pair_inputs if pair_inputs is None else bool(pair_inputs)
        key = (bool(paired), pair_inputs)
        if key not in self._batch_encoders:
            spec = tf.TensorSpec([None], tf.string)
            if paired:
                fn = tf.function(lambda texts, pairs: self(texts, pairs, pair_inputs),
                                 input_signature=[spec, spec], autograph=False)
            else:
                fn = tf.function(lambda texts: self(texts, pair_inputs=pair_inputs),
                                 input_signature=[spec], autograph=False)
            self._batch_encoders[key] = fn
        return self._batch_encoders[key]

    def encode_examples(self, examples, pair_inputs=None, chunk_size=4096):
        """Features of every example, as numpy arrays, `chunk_size` texts
        per call of `batch_encoder()`; up to `EAGER_TEXTS` examples are
        tokenised eagerly instead, which costs less than tracing the
        tokenizer (the same ids either way).

        Args:
            examples: `kdplug.data.Examples`.
            pair_inputs: overrides the encoder's `pair_inputs` (pairs only).
            chunk_size: int. Texts tokenised per call.

        Returns:
            A dict of `(len(examples), sequence_length)` int32 arrays.
        """
        paired = examples.pairs is not None
        if 0 < len(examples) <= EAGER_TEXTS:
            def encode(*texts):
                return self(*texts, pair_inputs=pair_inputs)
        else:
            encode = self.batch_encoder(paired, pair_inputs)
        columns = [examples.texts] + ([examples.pairs] if paired else [])
        chunks = []
        for start in range(0, max(len(examples), 1), chunk_size):
            texts = [tf.constant(list(c[start:start + chunk_size]), tf.string)
                     for c in columns]
            chunks.append({k: v.numpy() for k, v in encode(*texts).items()})
        return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}

    def dataset(self, examples, batch_size, shuffle=False, seed=0,
                extra=None, drop_remainder=False, pair_inputs=None,
                length_buckets=None):
        """A batched `(features, labels)` dataset for `Examples`.

        The texts are tokenised once, up front (`encode_examples()`): every
        epoch then reads token ids, and a new iterator (one per epoch in
        `fit`) does not re-initialise the tokenizer's vocabulary table,
        which costs about a quarter of a second each time. The ids take
        `4 * sequence_length` bytes per feature and example (3 features,
        7 with `pair_inputs`), about 1.5 KB per example at length 128.

        Args:
            examples: `kdplug.data.Examples`.
            batch_size: int.
            shuffle: reshuffle every epoch (seeded).
            seed: shuffle seed.
            extra: optional dict of per-example arrays added to the features
                (e.g. cached teacher outputs under `"teacher/<tap>"`).
            drop_remainder: drop the last partial batch.
            pair_inputs: overrides the encoder's `pair_inputs` (pairs only).
            length_buckets: a `kdplug.data.length_buckets.LengthBuckets`:
                batches of similar lengths, each cut to its longest
                sentence (per-token `extra` features too); None: every
                batch padded to `sequence_length`.
        """
        features = self.encode_examples(examples, pair_inputs)
        features.update(extra or {})
        ds = tf.data.Dataset.from_tensor_slices(
            (features, np.asarray(examples.labels)))
        if shuffle:
            ds = ds.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
        if length_buckets is None:
            ds = ds.batch(batch_size, drop_remainder=drop_remainder)
        else:
            ds = length_buckets.batch(ds, batch_size, len(examples), shuffle=shuffle,
                                      seed=seed, drop_remainder=drop_remainder)
        return ds.prefetch(tf.data.AUTOTUNE)


def _pair_separator(tokenizer):
    """Between a pair's segments: RoBERTa and XLM-RoBERTa put two end tokens
    (`<s> a </s></s> b </s>`, as their keras-hub preprocessors do); the
    other families one (`[CLS] a [SEP] b [SEP]`, the packer's default)."""
    if type(tokenizer).__name__ in ("RobertaTokenizer", "XLMRobertaTokenizer"):
        return [tokenizer.end_token_id] * 2
    return None
