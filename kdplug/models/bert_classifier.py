import keras
from keras import ops

from kdplug.errors import KdplugError
from kdplug.models import flops
from kdplug.models.attention_logits import attention_logits

INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="kdplug")
class BertClassifier(keras.Model):
    """A keras-hub BERT backbone with a classification head, and feature taps.

    `call()` returns logits. `taps()` runs the same forward pass once and
    returns only the named intermediate outputs that were asked for; layers
    above the deepest requested tap are not run at all.

    Tap names (layer indices are 1-based, as in the papers):
    - `embeddings`: embedding-layer output, `(batch, seq, hidden)`.
    - `hidden/<i>`: output of transformer layer `i`, `(batch, seq, hidden)`.
    - `cls/<i>`: `hidden/<i>[:, 0]`, the [CLS] vector, `(batch, hidden)`.
    - `attention/<i>`: layer `i`'s attention probabilities (post-softmax,
      padding masked, before attention dropout), `(batch, heads, seq, seq)`.
    - `attention_scores/<i>`: layer `i`'s pre-softmax scores
      `Q K^T / sqrt(head_dim)`, `(batch, heads, seq, seq)`, with padded *key*
      positions set to `kdplug.models.MASKED_SCORE` (-1e9) so that
      `softmax(scores) == attention/<i>`; terms must mask those entries.
      keras-hub's encoder is not forked: the scores are recomputed from the
      layer's own query/key projections, which costs
      `4 S H^2 + 2 S^2 H` extra FLOPs per layer and example (about 18% of a
      layer at `S=64, H=384, I=1536`), paid only when the tap is requested.
    - `pooled`: the pooler output, `(batch, hidden)`.
    - `logits`: `(batch, num_classes)`.

    Args:
        backbone: a `keras_hub.models.BertBackbone`.
        num_classes: int. Number of output classes (1 for regression).
        dropout: float. Dropout before the classifier.

    Examples:

    ```python
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=16)
    model = BertClassifier(backbone, num_classes=2)
    taps = model.taps(inputs, ["hidden/1", "logits"])
    ```
    """

    input_keys = INPUT_KEYS

    def __init__(self, backbone, num_classes, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.classifier = keras.layers.Dense(
            self.num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            name="logits",
        )
        self.classifier.build((None, backbone.hidden_dim))
        self.built = True

    @property
    def num_layers(self):
        return len(self.backbone.transformer_layers)

    @property
    def hidden_dim(self):
        return self.backbone.hidden_dim

    @property
    def num_heads(self):
        return self.backbone.num_heads

    def available_taps(self):
        names = ["embeddings", "pooled", "logits"]
        for i in range(1, self.num_layers + 1):
            names += [
                f"hidden/{i}", f"cls/{i}", f"attention/{i}",
                f"attention_scores/{i}",
            ]
        return names

    def tap_width(self, name):
        """The last-axis width of a tap (for building projections)."""
        if name == "logits":
            return self.num_classes
        if name.startswith("attention"):
            return None
        return self.hidden_dim

    def flops_per_example(self, sequence_length):
        """Analytic forward FLOPs of one example (see `kdplug.models.flops`).

        `L (8 S H^2 + 4 S^2 H + 4 S H I) + 2 H^2 + 2 H C`: the encoder layers,
        the pooler and the classifier; embedding lookups cost nothing.
        """
        s, h = int(sequence_length), self.hidden_dim
        layer = flops.transformer_layer_flops(s, h, self.backbone.intermediate_dim)
        return (
            self.num_layers * layer
            + flops.dense_flops(1, h, h)
            + flops.dense_flops(1, h, self.num_classes)
        )

    def call(self, inputs, training=False):
        return self.taps(inputs, ("logits",), training=training)["logits"]

    def taps(self, inputs, names=("logits",), training=False):
        names = set(names)
        unknown = names - set(self.available_taps())
        if unknown:
            raise KdplugError(
                f"{self.name} has no tap(s) {sorted(unknown)}; it has "
                f"{self.num_layers} layers and offers: embeddings, "
                f"hidden/1..{self.num_layers}, cls/<i>, attention/<i>, "
                "attention_scores/<i>, pooled, logits"
            )
        bb = self.backbone
        token_ids = inputs["token_ids"]
        padding_mask = inputs["padding_mask"]
        segment_ids = inputs.get("segment_ids")
        if segment_ids is None:
            segment_ids = ops.zeros_like(token_ids)
        tokens = bb.token_embedding(token_ids)
        x = bb.embeddings_add(
            (tokens, bb.position_embedding(tokens), bb.segment_embedding(segment_ids))
        )
        x = bb.embeddings_layer_norm(x)
        x = bb.embeddings_dropout(x, training=training)
        out = {}
        if "embeddings" in names:
            out["embeddings"] = x
        depth = self._depth_needed(names)
        for i, layer in enumerate(bb.transformer_layers[:depth], start=1):
            if f"attention_scores/{i}" in names:
                query = x
                if layer.normalize_first:
                    query = layer._self_attention_layer_norm(x)
                out[f"attention_scores/{i}"] = attention_logits(
                    layer._self_attention_layer, query, padding_mask=padding_mask
                )
            if f"attention/{i}" in names:
                x, attention = layer(
                    x,
                    padding_mask=padding_mask,
                    training=training,
                    return_attention_scores=True,
                )
                out[f"attention/{i}"] = attention
            else:
                x = layer(x, padding_mask=padding_mask, training=training)
            if f"hidden/{i}" in names:
                out[f"hidden/{i}"] = x
            if f"cls/{i}" in names:
                out[f"cls/{i}"] = x[:, 0, :]
        if names & {"pooled", "logits"}:
            pooled = bb.pooled_dense(x[:, 0, :])
            if "pooled" in names:
                out["pooled"] = pooled
            if "logits" in names:
                out["logits"] = self.classifier(
                    self.output_dropout(pooled, training=training)
                )
        return out

    def _depth_needed(self, names):
        if names & {"pooled", "logits"}:
            return self.num_layers
        depth = 0
        for name in names:
            if "/" in name:
                depth = max(depth, int(name.split("/")[1]))
        return depth

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "backbone": keras.saving.serialize_keras_object(self.backbone),
                "num_classes": self.num_classes,
                "dropout": self.dropout,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(
            config["backbone"]
        )
        return cls(**config)
