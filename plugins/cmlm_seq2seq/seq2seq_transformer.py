import keras
import keras_hub
from keras import ops

from kdplug_plugins.cmlm_seq2seq.seq2seq_model import Seq2SeqModel


@keras.saving.register_keras_serializable(package="kdplug_cmlm_seq2seq")
class Seq2SeqTransformer(Seq2SeqModel):
    """A Transformer encoder-decoder (Vaswani et al. 2017) from keras-hub
    layers: the `cmlm-seq2seq` student.

    One `ReversibleEmbedding` holds the word-piece vectors: the encoder and
    the decoder embed with it, and the output layer is its transpose (tied
    weights, as the paper's Transformer student shares its embeddings).
    Each side adds its own learned `PositionEmbedding` (what
    `TokenAndPositionEmbedding` adds; kept apart here so that one token
    matrix serves both sides), then runs `TransformerEncoder` /
    `TransformerDecoder` layers (pre-layer-norm, GELU, causal self-attention
    in the decoder, cross-attention over the encoder's outputs) and a final
    layer norm.

    Inputs (a dict, `seq2seq_keys`): `encoder_token_ids`,
    `encoder_padding_mask` `(batch, max_source_length)`, `decoder_token_ids`,
    `decoder_padding_mask` `(batch, max_target_length + 1)`; other keys
    (teacher outputs, labels) are ignored. Output: logits `(batch,
    max_target_length + 1, vocabulary_size)`; position `j` predicts decoder
    token `j + 1` (the label `j`). Shorter inputs work too (decoding feeds
    the whole prefix buffer).

    Taps: `logits` only (`taps(inputs, ["logits"])`), what the `Distiller`
    asks a student for.

    Args:
        vocabulary_size: int. The teacher's word-piece vocabulary.
        max_source_length: int. Source word pieces (encoder positions).
        max_target_length: int. Target word pieces; the decoder has one
            more position ([CLS] in, [SEP] out).
        hidden_dim: int. Model width.
        num_encoder_layers: int.
        num_decoder_layers: int.
        num_heads: int. Attention heads (divides `hidden_dim`).
        intermediate_dim: int. Feed-forward width.
        dropout: float.

    Examples:

    ```python
    model = Seq2SeqTransformer(vocabulary_size=30522, max_source_length=48,
                               max_target_length=64, hidden_dim=256)
    logits = model({"encoder_token_ids": src, "encoder_padding_mask": src > 0,
                    "decoder_token_ids": dec, "decoder_padding_mask": dec > 0})
    model.taps(batch, ["logits"])["logits"].shape  # (batch, 65, 30522)
    ```
    """

    def __init__(self, vocabulary_size, max_source_length, max_target_length,
                 hidden_dim=256, num_encoder_layers=3, num_decoder_layers=3,
                 num_heads=4, intermediate_dim=1024, dropout=0.1, **kwargs):
        super().__init__(vocabulary_size, max_source_length, max_target_length,
                         **kwargs)
        if hidden_dim % num_heads:
            raise ValueError(f"hidden_dim {hidden_dim} is not a multiple of "
                             f"num_heads {num_heads}")
        self.hidden_dim = int(hidden_dim)
        self.num_encoder_layers = int(num_encoder_layers)
        self.num_decoder_layers = int(num_decoder_layers)
        self.num_heads = int(num_heads)
        self.intermediate_dim = int(intermediate_dim)
        self.dropout = float(dropout)
        init = keras.initializers.TruncatedNormal(stddev=0.02)
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            self.vocabulary_size, self.hidden_dim, tie_weights=True,
            embeddings_initializer=init, name="token_embedding")
        self.encoder_position = keras_hub.layers.PositionEmbedding(
            self.max_source_length, initializer=init, name="encoder_position")
        self.decoder_position = keras_hub.layers.PositionEmbedding(
            self.decoder_length, initializer=init, name="decoder_position")
        self.embedding_dropout = keras.layers.Dropout(self.dropout,
                                                      name="embedding_dropout")
        layer_args = dict(intermediate_dim=self.intermediate_dim,
                          num_heads=self.num_heads, dropout=self.dropout,
                          activation="gelu", normalize_first=True,
                          kernel_initializer=init)
        self.encoder_layers = [
            keras_hub.layers.TransformerEncoder(**layer_args, name=f"encoder_{i + 1}")
            for i in range(self.num_encoder_layers)]
        self.decoder_layers = [
            keras_hub.layers.TransformerDecoder(**layer_args, name=f"decoder_{i + 1}")
            for i in range(self.num_decoder_layers)]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-5,
                                                            name="encoder_norm")
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-5,
                                                            name="decoder_norm")
        self.build_with_dummy_inputs()

    def _embed(self, token_ids, position, training):
        x = self.token_embedding(token_ids)
        x = x + position(x)
        return self.embedding_dropout(x, training=training)

    def encode(self, token_ids, padding_mask, training=False):
        """The encoder's outputs `(batch, source_length, hidden_dim)`."""
        x = self._embed(token_ids, self.encoder_position, training)
        for layer in self.encoder_layers:
            x = layer(x, padding_mask=padding_mask, training=training)
        return self.encoder_norm(x)

    def decode_states(self, encoder_outputs, encoder_padding_mask, token_ids,
                      padding_mask, training=False):
        """The decoder's output states `(batch, target_length, hidden_dim)`
        (causal: position `j` sees tokens `0..j`)."""
        x = self._embed(token_ids, self.decoder_position, training)
        for layer in self.decoder_layers:
            x = layer(x, encoder_sequence=encoder_outputs,
                      decoder_padding_mask=padding_mask,
                      encoder_padding_mask=encoder_padding_mask,
                      training=training)
        return self.decoder_norm(x)

    def decoder_cache(self, encoder_outputs, encoder_padding_mask):
        """The cache for decoding one position at a time (`decode_cached`),
        as `(fixed, moving)`: `fixed` is the cross-attention's keys and
        values over the encoder's outputs, computed here once, `(batch,
        layers, 2, source_length, heads, head_dim)`, the same for every
        beam of a source; `moving` the decoder's self-attention keys and
        values, empty, `(batch, layers, 2, decoder_length, heads,
        head_dim)`, which follow the beams."""
        batch, source_length = ops.shape(encoder_outputs)[0], ops.shape(encoder_outputs)[1]
        head_dim = self.hidden_dim // self.num_heads
        layers = self.num_decoder_layers
        dtype = encoder_outputs.dtype
        self_cache = ops.zeros(
            (batch, layers, 2, self.decoder_length, self.num_heads, head_dim), dtype)
        cross_cache = ops.zeros(
            (batch, layers, 2, source_length, self.num_heads, head_dim), dtype)
        start = ops.zeros((batch, 1), "int32")  # any token: only the cross cache is kept
        _, _, cross_cache = self._cached_layers(
            start, 0, encoder_outputs, encoder_padding_mask, self_cache, cross_cache,
            fill_cross=True)
        return cross_cache, self_cache

    def decode_cached(self, token_ids, index, encoder_outputs, encoder_padding_mask,
                      fixed, moving):
        """The decoder state of position `index` alone, `(batch, 1,
        hidden_dim)`, for its token `token_ids` `(batch, 1)`: the earlier
        positions' keys and values come from `moving` (this position's are
        written into it) and the encoder's from `fixed`. Equal to
        `decode_states(...)[:, index]` on the whole prefix, for `L` times
        less work at step `L`. Returns `(states, moving)`."""
        x, self_cache, _ = self._cached_layers(
            token_ids, index, encoder_outputs, encoder_padding_mask, moving,
            fixed, fill_cross=False)
        return x, self_cache

    def _cached_layers(self, token_ids, index, encoder_outputs, encoder_padding_mask,
                       self_cache, cross_cache, fill_cross):
        x = self.token_embedding(token_ids)
        x = x + self.decoder_position(x, start_index=index)
        self_caches, cross_caches = [], []
        for i, layer in enumerate(self.decoder_layers):
            x, layer_self, layer_cross = layer(
                x, encoder_sequence=encoder_outputs,
                encoder_padding_mask=encoder_padding_mask,
                self_attention_cache=self_cache[:, i],
                self_attention_cache_update_index=index,
                cross_attention_cache=cross_cache[:, i],
                cross_attention_cache_update_index=0 if fill_cross else None)
            self_caches.append(layer_self)
            cross_caches.append(layer_cross)
        return (self.decoder_norm(x), ops.stack(self_caches, axis=1),
                ops.stack(cross_caches, axis=1))

    def project(self, states, training=False):
        """Word-piece logits (float32) of decoder states: the transposed
        embedding."""
        return ops.cast(self.token_embedding(states, reverse=True), "float32")

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_dim": self.hidden_dim,
            "num_encoder_layers": self.num_encoder_layers,
            "num_decoder_layers": self.num_decoder_layers,
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
        })
        return config
