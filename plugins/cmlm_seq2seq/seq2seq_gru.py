import keras
import keras_hub
from keras import ops

from kdplug_plugins.cmlm_seq2seq.seq2seq_model import Seq2SeqModel


@keras.saving.register_keras_serializable(package="kdplug_cmlm_seq2seq")
class Seq2SeqGru(Seq2SeqModel):
    """A recurrent encoder-decoder with attention (Bahdanau et al. 2015,
    Luong et al. 2015): the second `cmlm-seq2seq` student kind.

    Encoder: a bidirectional GRU over the source's word-piece embeddings.
    Decoder: a GRU started from a projection of the encoder's two final
    states, dot-product attention (`keras.layers.Attention`) of its states
    over the projected encoder outputs, and an output layer `tanh(W [h;
    c])` tied to the word-piece embedding (`ReversibleEmbedding`, shared by
    both sides).

    Inputs, output and taps as `Seq2SeqTransformer` (`Seq2SeqModel`).

    Args:
        vocabulary_size: int.
        max_source_length: int.
        max_target_length: int.
        embedding_dim: int. Word-piece embedding width.
        units: int. GRU units (per direction in the encoder).
        dropout: float. On the embeddings and before the output layer.

    Examples:

    ```python
    model = Seq2SeqGru(vocabulary_size=30522, max_source_length=48,
                       max_target_length=64, embedding_dim=128, units=256)
    logits = model(batch)  # (batch, 65, 30522)
    ```
    """

    def __init__(self, vocabulary_size, max_source_length, max_target_length,
                 embedding_dim=256, units=256, dropout=0.1, **kwargs):
        super().__init__(vocabulary_size, max_source_length, max_target_length,
                         **kwargs)
        self.embedding_dim = int(embedding_dim)
        self.units = int(units)
        self.dropout = float(dropout)
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            self.vocabulary_size, self.embedding_dim, tie_weights=True,
            embeddings_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            name="token_embedding")
        self.embedding_dropout = keras.layers.Dropout(self.dropout,
                                                      name="embedding_dropout")
        self.encoder = keras.layers.Bidirectional(
            keras.layers.GRU(self.units, return_sequences=True, return_state=True),
            name="encoder")
        self.bridge = keras.layers.Dense(self.units, activation="tanh",
                                         name="bridge")
        self.memory = keras.layers.Dense(self.units, use_bias=False, name="memory")
        self.decoder = keras.layers.GRU(self.units, return_sequences=True,
                                        name="decoder")
        self.attention = keras.layers.Attention(name="attention")
        self.combine = keras.layers.Dense(self.embedding_dim, activation="tanh",
                                          name="combine")
        self.output_dropout = keras.layers.Dropout(self.dropout,
                                                   name="output_dropout")
        self.build_with_dummy_inputs()

    def encode(self, token_ids, padding_mask, training=False):
        """`(memory, initial decoder state)`: the projected encoder outputs
        `(batch, source_length, units)` and `(batch, units)`."""
        x = self.embedding_dropout(self.token_embedding(token_ids),
                                   training=training)
        outputs, forward, backward = self.encoder(x, mask=padding_mask,
                                                  training=training)
        state = self.bridge(ops.concatenate([forward, backward], axis=-1))
        return self.memory(outputs), state

    def decode_states(self, encoder_outputs, encoder_padding_mask, token_ids,
                      padding_mask, training=False):
        """`tanh(W [h; c])` at every decoder position `(batch, target_length,
        embedding_dim)`."""
        memory, state = encoder_outputs
        x = self.embedding_dropout(self.token_embedding(token_ids),
                                   training=training)
        h = self.decoder(x, initial_state=state, mask=padding_mask,
                         training=training)
        context = self.attention([h, memory],
                                 mask=[padding_mask, encoder_padding_mask])
        return self.combine(ops.concatenate([h, context], axis=-1))

    def decoder_cache(self, encoder_outputs, encoder_padding_mask):
        """The cache for decoding one position at a time (`decode_cached`),
        as `(fixed, moving)`: nothing fixed beyond the encoder's outputs;
        `moving` is the decoder GRU's state, `(batch, units)`, starting
        from the encoder's bridge."""
        return (), encoder_outputs[1]

    def decode_cached(self, token_ids, index, encoder_outputs, encoder_padding_mask,
                      fixed, moving):
        """The decoder state of the next position alone, `(batch, 1,
        embedding_dim)`, for its token `token_ids` `(batch, 1)`: one step of
        the GRU cell from the cached state, then attention over the
        encoder's memory. Equal to `decode_states(...)[:, index]` on the
        whole prefix (the GRU reads left to right; `index` is not needed).
        Returns `(states, moving)`."""
        memory = encoder_outputs[0]
        x = self.token_embedding(token_ids)[:, 0]
        h, _ = self.decoder.cell(x, [moving])
        h = h[:, None, :]
        context = self.attention([h, memory], mask=[None, encoder_padding_mask])
        return self.combine(ops.concatenate([h, context], axis=-1)), h[:, 0]

    def project(self, states, training=False):
        """Word-piece logits (float32): dropout, then the transposed
        embedding."""
        states = self.output_dropout(states, training=training)
        return ops.cast(self.token_embedding(states, reverse=True), "float32")

    def get_config(self):
        config = super().get_config()
        config.update({"embedding_dim": self.embedding_dim, "units": self.units,
                       "dropout": self.dropout})
        return config
