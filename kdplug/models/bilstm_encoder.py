import keras
from keras import ops

from kdplug.models import flops


@keras.saving.register_keras_serializable(package="kdplug")
class BiLstmEncoder(keras.layers.Layer):
    """Embedding, one bidirectional LSTM, mask-aware max-pooling over time.

    Padded steps are skipped by the LSTM (Keras masking) and excluded from
    the max (they are set to a large negative number first); a sequence with
    no real token pools to zeros. Output width is `2 * lstm_units`.

    Args:
        vocabulary_size: int. Size of the id space (WordPiece or word ids).
        embedding_dim: int.
        lstm_units: int. Units per direction.
        dropout: float. Dropout on the embeddings.

    Examples:

    ```python
    encoder = BiLstmEncoder(vocabulary_size=30522, embedding_dim=128,
                            lstm_units=128)
    sentence = encoder(token_ids, padding_mask=padding_mask)  # (batch, 256)
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=128, lstm_units=128,
                 dropout=0.1, **kwargs):
        super().__init__(**kwargs)
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
        h = ops.where(mask[:, :, None], h, ops.cast(-1e9, h.dtype))
        pooled = ops.max(h, axis=1)
        any_token = ops.any(mask, axis=1)[:, None]
        return ops.where(any_token, pooled, ops.zeros_like(pooled))

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
            }
        )
        return config
