import keras
from keras import ops

from kdplug.models import flops

POOLINGS = ("max", "final_states")


@keras.saving.register_keras_serializable(package="kdplug")
class BiLstmEncoder(keras.layers.Layer):
    """Embedding, one bidirectional LSTM, then a sentence vector per input.

    `pooling` picks the sentence vector `h` (width `2 * lstm_units`) from the
    BiLSTM's states `f_t` (forward) and `b_t` (backward) over the valid
    (unpadded) steps `t in V`:

    ```
    max:           h = max_{t in V} [f_t; b_t]            (element-wise)
    final_states:  h = [f_last; b_first],  last = max V, first = min V
    ```

    `final_states` is Tang et al. (2019)'s encoder ("Distilling
    Task-Specific Knowledge from BERT into Simple Neural Networks": the
    concatenation of the forward LSTM's state after the last word and the
    backward LSTM's state after the first word; their reference code reads
    the LSTM's final hidden states). `max` (mask-aware max-pooling over time)
    was kdplug 0.1's only encoder and stays the default of the class, so
    saved files without the key load unchanged. Padded steps are skipped by
    the LSTM (Keras masking) and never pooled or read; a sequence with no
    real token gives zeros.

    Args:
        vocabulary_size: int. Size of the id space (WordPiece or word ids).
        embedding_dim: int.
        lstm_units: int. Units per direction.
        dropout: float. Dropout on the embeddings.
        pooling: `"max"` or `"final_states"` (above).

    Examples:

    ```python
    encoder = BiLstmEncoder(vocabulary_size=30522, embedding_dim=128,
                            lstm_units=128, pooling="final_states")
    sentence = encoder(token_ids, padding_mask=padding_mask)  # (batch, 256)
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=128, lstm_units=128,
                 dropout=0.1, pooling="max", **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.pooling = pooling
        self.vocabulary_size = int(vocabulary_size)
        self.embedding_dim = int(embedding_dim)
        self.lstm_units = int(lstm_units)
        self.dropout = float(dropout)
        self.embedding = keras.layers.Embedding(
            self.vocabulary_size, self.embedding_dim, name="embedding")
        self.embedding_dropout = keras.layers.Dropout(
            self.dropout, name="embedding_dropout")
        self.bilstm = keras.layers.Bidirectional(
            keras.layers.LSTM(self.lstm_units, return_sequences=True), name="bilstm")

    @property
    def output_dim(self):
        return 2 * self.lstm_units

    def build(self, input_shape=None):
        self.embedding.build((None, None))
        self.bilstm.build((None, None, self.embedding_dim))
        self.built = True

    def call(self, ids, padding_mask=None, training=None):
        if padding_mask is None:
            padding_mask = ops.not_equal(ids, 0)
        mask = ops.cast(padding_mask, "bool")
        x = self.embedding_dropout(self.embedding(ids), training=training)
        h = self.bilstm(x, mask=mask, training=training)
        any_token = ops.any(mask, axis=1)[:, None]
        if self.pooling == "final_states":
            pooled = self._final_states(h, mask)
        else:
            h = ops.where(mask[:, :, None], h, ops.cast(-1e9, h.dtype))
            pooled = ops.max(h, axis=1)
        return ops.where(any_token, pooled, ops.zeros_like(pooled))

    def _final_states(self, h, mask):
        """`[f_last; b_first]`: the forward half at the last valid step and
        the backward half at the first (one-hot selections: XLA-friendly)."""
        steps = ops.shape(h)[1]
        positions = ops.arange(steps)[None, :]
        last = ops.max(ops.where(mask, positions, -1), axis=1)
        first = ops.min(ops.where(mask, positions, steps), axis=1)
        pick_last = ops.one_hot(last, steps, dtype=h.dtype)[:, :, None]
        pick_first = ops.one_hot(first, steps, dtype=h.dtype)[:, :, None]
        u = self.lstm_units
        forward = ops.sum(h[:, :, :u] * pick_last, axis=1)
        backward = ops.sum(h[:, :, u:] * pick_first, axis=1)
        return ops.concatenate([forward, backward], axis=-1)

    def flops_per_example(self, sequence_length):
        """Two directions of `2 S * 4u (E + u)`."""
        return 2 * flops.lstm_flops(
            sequence_length, self.embedding_dim, self.lstm_units)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "lstm_units": self.lstm_units,
                "dropout": self.dropout,
                "pooling": self.pooling,
            }
        )
        return config
