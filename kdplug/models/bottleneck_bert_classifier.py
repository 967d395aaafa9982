import keras
from keras import ops

from kdplug import keys
from kdplug.models import flops
from kdplug.models.bottleneck_transformer_block import BottleneckTransformerBlock
from kdplug.models.sentence_pooling import check_pooling
from kdplug.models.tap_names import add_head_taps
from kdplug.models.tap_names import add_layer_taps
from kdplug.models.tap_names import check_tap_names
from kdplug.models.tap_names import depth_needed
from kdplug.models.tap_names import transformer_tap_width
from kdplug.models.tap_names import transformer_taps


def _init():
    return keras.initializers.TruncatedNormal(stddev=0.02)


@keras.saving.register_keras_serializable(package="kdplug")
class BottleneckBertClassifier(keras.Model):
    """A MobileBERT-style BERT: wide between blocks, narrow inside them.

    Embeddings: token embeddings of width `embedding_dim`, optionally
    concatenated with the previous and next token's (MobileBERT's trigram
    input, width `3 * embedding_dim`) and projected to `hidden_dim`, plus
    position and segment embeddings, layer norm and dropout. Then
    `num_layers` `BottleneckTransformerBlock`s, a tanh pooler on [CLS] (or,
    with `pooling="mean"`, on the mean of the last block's states over the
    real, non-padding positions) and a dense classifier.

    `hidden_dim` is the inter-block width, normally the teacher's hidden
    size, so that `hidden/<i>` and `embeddings` match the teacher's widths.

    It offers the same `taps(inputs, names, training)` API as
    `BertClassifier`: `embeddings`, `hidden/<i>` and `cls/<i>` (width
    `hidden_dim`), `attention/<i>` and `attention_scores/<i>` (`(batch,
    num_heads, seq, seq)`, scores masked with `MASKED_SCORE`), `pooled`,
    `logits`. Only requested taps are computed and layers above the deepest
    requested tap are not run.

    Args:
        vocabulary_size: int.
        num_classes: int.
        num_layers: int. Number of blocks.
        hidden_dim: int. Inter-block width.
        intra_dim: int. Intra-block (bottleneck) width.
        num_heads: int. Attention heads (of width `intra_dim / num_heads`).
        intermediate_dim: int. Feed-forward inner width.
        num_feedforward: int. Stacked feed-forward networks per block.
        embedding_dim: int or None. Token embedding width; None means
            `hidden_dim` without projection (no factorisation).
        trigram_embeddings: bool. Concatenate neighbouring token embeddings
            before the projection (needs `embedding_dim`).
        max_sequence_length: int. Size of the position embedding.
        num_segments: int.
        activation: feed-forward activation.
        dropout: float.
        layer_norm_epsilon: float.
        pooling: `"cls"` or `"mean"`: what the pooler reads
            (`kdplug.models.sentence_pooling`).

    Examples:

    ```python
    model = BottleneckBertClassifier(
        vocabulary_size=30522, num_classes=2, num_layers=6, hidden_dim=384,
        intra_dim=128, num_heads=4, intermediate_dim=512, num_feedforward=4)
    taps = model.taps(inputs, ["hidden/3", "attention/3", "logits"])
    ```
    """

    input_keys = keys.TOKEN_INPUTS

    def __init__(self, vocabulary_size, num_classes, num_layers=6, hidden_dim=384,
                 intra_dim=128, num_heads=4, intermediate_dim=512,
                 num_feedforward=4, embedding_dim=128, trigram_embeddings=True,
                 max_sequence_length=512, num_segments=2, activation="relu",
                 dropout=0.1, layer_norm_epsilon=1e-12, pooling="cls", **kwargs):
        super().__init__(**kwargs)
        self.pooling = check_pooling(pooling)
        self.vocabulary_size = int(vocabulary_size)
        self.num_classes = int(num_classes)
        self._num_layers = int(num_layers)
        self._hidden_dim = int(hidden_dim)
        self.intra_dim = int(intra_dim)
        self._num_heads = int(num_heads)
        self.intermediate_dim = int(intermediate_dim)
        self.num_feedforward = int(num_feedforward)
        self.embedding_dim = None if embedding_dim is None else int(embedding_dim)
        self.trigram_embeddings = bool(trigram_embeddings and embedding_dim)
        self.max_sequence_length = int(max_sequence_length)
        self.num_segments = int(num_segments)
        self.activation = activation
        self.dropout = float(dropout)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        token_dim = self.embedding_dim or self._hidden_dim

        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size, token_dim, embeddings_initializer=_init(),
            name="token_embedding")
        self.token_embedding.build((None, None))
        self.embedding_projection = None
        if self.embedding_dim is not None:
            self.embedding_projection = keras.layers.Dense(
                self._hidden_dim, kernel_initializer=_init(),
                name="embedding_projection")
            width = token_dim * (3 if self.trigram_embeddings else 1)
            self.embedding_projection.build((None, None, width))
        self.position_embedding = keras.layers.Embedding(
            self.max_sequence_length, self._hidden_dim,
            embeddings_initializer=_init(), name="position_embedding")
        self.position_embedding.build((None, None))
        self.segment_embedding = keras.layers.Embedding(
            self.num_segments, self._hidden_dim, embeddings_initializer=_init(),
            name="segment_embedding")
        self.segment_embedding.build((None, None))
        self.embeddings_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="embeddings_norm")
        self.embeddings_norm.build((None, None, self._hidden_dim))
        self.embeddings_dropout = keras.layers.Dropout(
            self.dropout, name="embeddings_dropout")
        self.blocks = []
        for i in range(self._num_layers):
            block = BottleneckTransformerBlock(
                hidden_dim=self._hidden_dim,
                intra_dim=self.intra_dim,
                num_heads=self._num_heads,
                intermediate_dim=self.intermediate_dim,
                num_feedforward=self.num_feedforward,
                activation=activation,
                dropout=self.dropout,
                layer_norm_epsilon=self.layer_norm_epsilon,
                name=f"block_{i}",
            )
            block.build((None, None, self._hidden_dim))
            self.blocks.append(block)
        self.pooled_dense = keras.layers.Dense(
            self._hidden_dim, activation="tanh", kernel_initializer=_init(),
            name="pooled_dense")
        self.pooled_dense.build((None, self._hidden_dim))
        self.output_dropout = keras.layers.Dropout(self.dropout, name="output_dropout")
        self.classifier = keras.layers.Dense(
            self.num_classes, kernel_initializer=_init(), name="logits")
        self.classifier.build((None, self._hidden_dim))
        self.built = True

    @property
    def num_layers(self):
        return self._num_layers

    @property
    def hidden_dim(self):
        return self._hidden_dim

    @property
    def num_heads(self):
        return self._num_heads

    def available_taps(self):
        return transformer_taps(self.num_layers)

    def tap_width(self, name):
        """The last-axis width of a tap (for building projections)."""
        return transformer_tap_width(name, self.hidden_dim, self.num_classes)

    def call(self, inputs, training=False):
        return self.taps(inputs, ("logits",), training=training)["logits"]

    def embed(self, inputs, training=False):
        token_ids = inputs["token_ids"]
        segment_ids = inputs.get("segment_ids")
        if segment_ids is None:
            segment_ids = ops.zeros_like(token_ids)
        x = self.token_embedding(token_ids)
        if self.trigram_embeddings:
            nxt = ops.pad(x[:, 1:], [[0, 0], [0, 1], [0, 0]])
            prev = ops.pad(x[:, :-1], [[0, 0], [1, 0], [0, 0]])
            x = ops.concatenate([nxt, x, prev], axis=-1)
        if self.embedding_projection is not None:
            x = self.embedding_projection(x)
        positions = ops.arange(ops.shape(token_ids)[1])
        x = x + self.position_embedding(positions)[None] + self.segment_embedding(
            segment_ids)
        x = self.embeddings_norm(x)
        return self.embeddings_dropout(x, training=training)

    def taps(self, inputs, names=("logits",), training=False):
        names = check_tap_names(
            self, names,
            f"embeddings, hidden/1..{self.num_layers}, cls/<i>, attention/<i>, "
            "attention_scores/<i>, pooled, logits")
        padding_mask = inputs["padding_mask"]
        x = self.embed(inputs, training=training)
        out = {}
        if "embeddings" in names:
            out["embeddings"] = x
        for i, block in enumerate(
            self.blocks[: depth_needed(names, self.num_layers)], start=1
        ):
            if f"attention_scores/{i}" in names:
                out[f"attention_scores/{i}"] = block.attention_scores(x, padding_mask)
            if f"attention/{i}" in names:
                x, out[f"attention/{i}"] = block(
                    x, padding_mask=padding_mask, training=training,
                    return_attention=True)
            else:
                x = block(x, padding_mask=padding_mask, training=training)
            add_layer_taps(out, names, i, x)
        add_head_taps(out, names, x, self.pooled_dense, self.classifier,
                      self.output_dropout, training=training,
                      padding_mask=padding_mask, pooling=self.pooling)
        return out

    def flops_per_example(self, sequence_length):
        """Analytic forward FLOPs of one example (see `kdplug.models.flops`).

        Embedding projection `2 S (kE) H` (k = 3 with trigrams), every
        block's `BottleneckTransformerBlock.flops_per_example` (every block
        runs in full, so either pooling costs the same), the pooler `2 H^2`
        and the classifier `2 H C`.
        """
        s, h = int(sequence_length), self.hidden_dim
        total = sum(b.flops_per_example(s) for b in self.blocks)
        if self.embedding_projection is not None:
            width = self.embedding_dim * (3 if self.trigram_embeddings else 1)
            total += flops.dense_flops(s, width, h)
        return total + flops.dense_flops(1, h, h) + flops.dense_flops(
            1, h, self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_classes": self.num_classes,
                "num_layers": self.num_layers,
                "hidden_dim": self.hidden_dim,
                "intra_dim": self.intra_dim,
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "num_feedforward": self.num_feedforward,
                "embedding_dim": self.embedding_dim,
                "trigram_embeddings": self.trigram_embeddings,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "activation": self.activation,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "pooling": self.pooling,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
