import keras_hub
import tensorflow as tf


class TextEncoder:
    """Tokenises text (or text pairs) into BERT inputs inside `tf.data`.

    Wraps a keras-hub WordPiece tokenizer and a `MultiSegmentPacker` that adds
    [CLS]/[SEP], truncates and pads to `sequence_length`.

    Args:
        tokenizer: a `keras_hub.tokenizers.WordPieceTokenizer` (e.g.
            `BertTokenizer.from_preset(dir)`).
        sequence_length: int. Padded length.

    Examples:

    ```python
    encoder = TextEncoder(BertTokenizer.from_preset(path), 64)
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(32).map(encoder)
    ```
    """

    def __init__(self, tokenizer, sequence_length):
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.packer = keras_hub.layers.MultiSegmentPacker(
            start_value=tokenizer.cls_token_id,
            end_value=tokenizer.sep_token_id,
            pad_value=tokenizer.pad_token_id,
            truncate="round_robin",
            sequence_length=self.sequence_length,
        )

    @property
    def vocabulary_size(self):
        return self.tokenizer.vocabulary_size()

    def __call__(self, texts, pairs=None):
        segments = [self.tokenizer(texts)]
        if pairs is not None:
            segments.append(self.tokenizer(pairs))
        token_ids, segment_ids = self.packer(tuple(segments))
        return {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": tf.cast(token_ids != self.tokenizer.pad_token_id, "int32"),
        }

    def dataset(self, examples, batch_size, shuffle=False, seed=0,
                extra=None, drop_remainder=False):
        """A batched `(features, labels)` dataset for `Examples`.

        Args:
            examples: `kdplug.data.Examples`.
            batch_size: int.
            shuffle: reshuffle every epoch (seeded).
            seed: shuffle seed.
            extra: optional dict of per-example arrays added to the features
                (e.g. cached teacher outputs under `"teacher/<tap>"`).
            drop_remainder: drop the last partial batch.
        """
        columns = {"text": examples.texts}
        if examples.pairs is not None:
            columns["pair"] = examples.pairs
        for key, value in (extra or {}).items():
            columns[key] = value
        ds = tf.data.Dataset.from_tensor_slices((columns, examples.labels))
        if shuffle:
            ds = ds.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
        ds = ds.batch(batch_size, drop_remainder=drop_remainder)

        def encode(cols, labels):
            features = self(cols["text"], cols.get("pair"))
            for key in cols:
                if key not in ("text", "pair"):
                    features[key] = cols[key]
            return features, labels

        return ds.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE
        )
