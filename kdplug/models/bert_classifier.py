import keras
from keras import ops

from kdplug import keys
from kdplug.models import flops
from kdplug.models.encoder_taps import run_encoder
from kdplug.models.nested_config import deserialize_nested
from kdplug.models.sentence_pooling import check_pooling
from kdplug.models.sentence_pooling import pool_sequence
from kdplug.models.sentence_pooling import reads_every_position
from kdplug.models.tap_names import add_head_taps
from kdplug.models.tap_names import check_tap_names
from kdplug.models.tap_names import depth_needed
from kdplug.models.tap_names import top_sequence_taps
from kdplug.models.tap_names import transformer_tap_width
from kdplug.models.tap_names import transformer_taps


def transformer_offers(num_layers):
    """The taps of a transformer classifier, as error messages list them."""
    return (f"embeddings, hidden/1..{num_layers}, cls/<i>, attention/<i>, "
            "attention_scores/<i>, pooled, logits")


def check_cls_head(model, task_name):
    """Raises `KdplugError` when `model` pools other than [CLS]: keras-hub's
    `task_name` (what `to_task()` builds, a keras-hub preset) reads [CLS],
    so a mean-pooled model would predict differently there."""
    from kdplug.errors import KdplugError

    if model.pooling != "cls":
        raise KdplugError(
            f"{model.name!r} pools its sentence with pooling={model.pooling!r}; "
            f"keras-hub's {task_name} reads the [CLS] vector, so it cannot "
            "rebuild this model (export it as 'keras' or 'saved_model')")


def embed_inputs(backbone, inputs):
    """A BERT backbone's layer-normalised embeddings of `inputs` (no dropout).

    Token, position and segment embeddings summed (`segment_ids` default to
    zeros), then the embeddings layer norm.
    """
    token_ids = inputs["token_ids"]
    segment_ids = inputs.get("segment_ids")
    if segment_ids is None:
        segment_ids = ops.zeros_like(token_ids)
    tokens = backbone.token_embedding(token_ids)
    x = backbone.embeddings_add(
        (tokens, backbone.position_embedding(tokens),
         backbone.segment_embedding(segment_ids))
    )
    return backbone.embeddings_layer_norm(x)


class TappedClassifier(keras.Model):
    """What kdplug's BERT classifiers share: `call()` returns the `logits`
    tap, and the config is one nested Keras model (the `nested_key`
    argument, e.g. the backbone) plus plain attributes named like their
    constructor arguments (`config_attributes`)."""

    nested_key = "backbone"
    config_attributes = ()

    @property
    def hidden_dim(self):
        return self.backbone.hidden_dim

    @property
    def num_heads(self):
        return self.backbone.num_heads

    def call(self, inputs, training=False):
        return self.taps(inputs, ("logits",), training=training)["logits"]

    def get_config(self):
        config = super().get_config()
        config[self.nested_key] = keras.saving.serialize_keras_object(
            getattr(self, self.nested_key))
        config.update({k: getattr(self, k) for k in self.config_attributes})
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_nested(config, cls.nested_key))


@keras.saving.register_keras_serializable(package="kdplug")
class BertClassifier(TappedClassifier):
    """A keras-hub BERT backbone with a classification head, and feature taps.

    `call()` returns logits. `taps()` runs the same forward pass once and
    returns only the named intermediate outputs that were asked for; layers
    above the deepest requested tap are not run at all, and the deepest one
    runs for its [CLS] position only when nothing reads its other positions
    (`cls_only_layer`; e.g. `call()`, whose logits read the top [CLS] with
    `pooling="cls"`).

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
    - `pooled`: the pooler output, `(batch, hidden)`: the backbone's
      `pooled_dense` (tanh) on the sentence vector `pooling` reads.
    - `logits`: `(batch, num_classes)`; with `per_token=True`,
      `(batch, seq, num_classes)`.

    With `per_token=True` (token classification: POS tags, named entities)
    the classifier reads every position of the last layer (through the
    output dropout, not the pooler) and `logits` has one row per position,
    padding included (terms and metrics skip positions labelled `-1`); the
    top layer then always runs for every position (`cls_only_layer` is not
    used for `logits`). The other taps are unchanged (`pooled` is still the
    [CLS] pooler output).

    `pooling` is how the sentence head reads the last layer: `"cls"` (its
    [CLS] vector, as keras-hub's and Hugging Face's BERT classifiers) or
    `"mean"` (the mean of its states over the real, non-padding positions
    of `padding_mask`, as sentence-transformers checkpoints were trained),
    then `pooled_dense` and the classifier either way. With `"mean"` the
    top layer runs for every position whenever `pooled` or `logits` is
    read. A per-token head pools nothing: it takes `"cls"` only (a
    `ValueError` otherwise).

    Args:
        backbone: a `keras_hub.models.BertBackbone`.
        num_classes: int. Number of output classes (1 for regression).
        dropout: float. Dropout before the classifier.
        per_token: bool. Classify every position instead of the sequence.
        pooling: `"cls"` or `"mean"`: what the sentence head reads.

    Examples:

    ```python
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=16)
    model = BertClassifier(backbone, num_classes=2)
    taps = model.taps(inputs, ["hidden/1", "logits"])
    tagger = BertClassifier(backbone, num_classes=17, per_token=True)
    tagger(inputs).shape  # (batch, seq, 17)
    encoder = BertClassifier(backbone, num_classes=2, pooling="mean")
    ```
    """

    input_keys = keys.TOKEN_INPUTS
    config_attributes = ("num_classes", "dropout", "per_token", "pooling")

    def __init__(self, backbone, num_classes, dropout=0.1, per_token=False,
                 pooling="cls", **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.per_token = bool(per_token)
        self.pooling = check_pooling(pooling, self.per_token)
        if self.per_token and getattr(backbone, "pooled_dense", None) is not None:
            # A head on every token never reads the pooler: left out of
            # training (no optimizer slots, no "gradients do not exist").
            backbone.pooled_dense.trainable = False
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.classifier = keras.layers.Dense(
            self.num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            name="logits",
        )
        self.classifier.build((None, backbone.hidden_dim))
        self.built = True

    @property
    def family(self):
        """BERT's `kdplug.models.HubFamily` (what `HubTextClassifier` runs
        for the other keras-hub families)."""
        from kdplug.models.hub_family import FAMILIES

        return FAMILIES["bert"]

    @property
    def num_layers(self):
        return len(self.backbone.transformer_layers)

    def to_task(self, preprocessor=None):
        """keras-hub's `BertTextClassifier` on this model's backbone, with
        its classifier's weights (`output_dropout`, `output_dense`: the same
        head), e.g. to `save_to_preset` it; not for `per_token` models, nor
        mean-pooled ones (keras-hub's classifier reads [CLS])."""
        import keras_hub

        from kdplug.errors import KdplugError

        if self.per_token:
            raise KdplugError(
                f"{self.name!r} classifies every token; keras-hub's "
                "BertTextClassifier classifies sentences")
        check_cls_head(self, "BertTextClassifier")
        task = keras_hub.models.BertTextClassifier(
            backbone=self.backbone, num_classes=self.num_classes,
            preprocessor=preprocessor, dropout=self.dropout)
        task.output_dense.set_weights(self.classifier.get_weights())
        return task

    def available_taps(self):
        return transformer_taps(self.num_layers)

    def tap_width(self, name):
        """The last-axis width of a tap (for building projections)."""
        return transformer_tap_width(name, self.hidden_dim, self.num_classes)

    def flops_per_example(self, sequence_length):
        """Analytic forward FLOPs of one example (see `kdplug.models.flops`).

        `(L - 1) (8 S H^2 + 4 S^2 H + 4 S H I) + (4 S H^2 + 4 H^2 + 4 S H +
        4 H I) + 2 H^2 + 2 H C`: the encoder layers (the top one for its
        [CLS] position only, as `call()` runs it), the pooler and the
        classifier; embedding lookups cost nothing. With
        `pooling="mean"`: `L (8 S H^2 + 4 S^2 H + 4 S H I) + 2 H^2 + 2 H C`
        (every layer in full; the mean itself is no matmul). With
        `per_token`: `L (8 S H^2 + 4 S^2 H + 4 S H I) + 2 S H C` (every
        layer in full, the classifier at every position, no pooler).
        """
        s, h = int(sequence_length), self.hidden_dim
        i = self.backbone.intermediate_dim
        layer = flops.transformer_layer_flops(s, h, i)
        if self.per_token:
            return (self.num_layers * layer
                    + flops.dense_flops(s, h, self.num_classes))
        top = layer if self.pooling == "mean" else flops.cls_only_layer_flops(s, h, i)
        return (
            (self.num_layers - 1) * layer
            + top
            + flops.dense_flops(1, h, h)
            + flops.dense_flops(1, h, self.num_classes)
        )

    def taps(self, inputs, names=("logits",), training=False):
        names = check_tap_names(self, names, transformer_offers(self.num_layers))
        bb = self.backbone
        padding_mask = inputs["padding_mask"]
        x = bb.embeddings_dropout(embed_inputs(bb, inputs), training=training)
        out = {}
        if "embeddings" in names:
            out["embeddings"] = x
        x = run_encoder(bb.transformer_layers, x, names, out, padding_mask,
                        self._depth_needed(names), self._sequence_taps,
                        training=training)
        head_names = names - {"logits"} if self.per_token else names
        add_head_taps(out, head_names, x, bb.pooled_dense, self.classifier,
                      self.output_dropout, training=training,
                      padding_mask=padding_mask, pooling=self.pooling)
        if self.per_token and "logits" in names:
            out["logits"] = self.classifier(
                self.output_dropout(x, training=training))
        return out

    def pooled_output(self, x, padding_mask):
        """The `pooled` tap of the top layer's states `x` `(batch, seq,
        hidden)`: `pooled_dense` on the sentence vector `pooling` reads
        (for code that runs the layers itself, e.g. FastBERT's adaptive
        inference)."""
        return self.backbone.pooled_dense(pool_sequence(x, padding_mask, self.pooling))

    @property
    def _sequence_taps(self):
        """Layer `i -> its taps that read every position`; at the top
        layer, the head's taps with mean pooling and a per-token head's
        `logits` too."""
        return top_sequence_taps(
            self.num_layers, reads_every_position(self.pooling, self.per_token))

    def _depth_needed(self, names):
        return depth_needed(names, self.num_layers)
