import keras

from kdplug import keys
from kdplug.errors import KdplugError
from kdplug.models import flops
from kdplug.models.bert_classifier import TappedClassifier
from kdplug.models.bert_classifier import check_cls_head
from kdplug.models.encoder_taps import run_encoder
from kdplug.models.hub_family import family_of
from kdplug.models.sentence_pooling import check_pooling
from kdplug.models.sentence_pooling import pool_sequence
from kdplug.models.sentence_pooling import reads_every_position
from kdplug.models.tap_names import check_tap_names
from kdplug.models.tap_names import depth_needed
from kdplug.models.tap_names import top_sequence_taps
from kdplug.models.tap_names import transformer_tap_width
from kdplug.models.tap_names import transformer_taps


@keras.saving.register_keras_serializable(package="kdplug")
class HubTextClassifier(TappedClassifier):
    """A classifier on any keras-hub text backbone (DistilBERT, RoBERTa,
    XLM-RoBERTa, ALBERT, ELECTRA, DeBERTaV3, BERT), with feature taps.

    The forward pass is the backbone's own (embeddings, encoder layers,
    `kdplug.models.HubFamily` says how each family forms them) followed by
    the head keras-hub's `<Family>TextClassifier` puts on the [CLS] vector
    (for RoBERTa: dropout, a tanh `pooled_dense`, dropout, the classifier),
    or with `pooling="mean"` on the mean of the last layer's states over
    the real (non-padding) positions, the same head after it; with
    `pooling="cls"` a keras-hub text classifier converts both ways with its
    weights:
    `from_task(task)` keeps a fine-tuned head, `to_task(preprocessor)`
    gives the keras-hub model to ship (`save_to_preset`). kdplug's
    `BertClassifier` remains BERT's tapped model; this class serves the
    other families with the same taps and the same `call()`.

    Taps (1-based layer indices): `embeddings` (the first layer's input,
    projected when the family's embeddings are narrower), `hidden/<i>`,
    `cls/<i>`, `attention/<i>` and `attention_scores/<i>` (families whose
    layers are keras-hub `TransformerEncoder`s: not DeBERTaV3), `pooled`
    (the sentence vector `pooling` reads, through the pooler), `logits`.
    ALBERT's layer `i` is the `i`-th call of its shared layers.

    Args:
        backbone: a keras-hub backbone of a family in
            `kdplug.models.hub_family.FAMILIES`.
        num_classes: int. Classes of the head (1 for regression).
        dropout: float. The head's dropout.
        pooling: `"cls"` (keras-hub's head) or `"mean"` (see
            `kdplug.models.sentence_pooling`); a mean-pooled model has no
            keras-hub task (`to_task()` refuses it).
        per_token: bool. Classify every position (token classification,
            extractive QA's start and end): `logits` is `(batch, seq,
            num_classes)`, the classifier on each top-layer state after
            dropout, as `BertClassifier(per_token=True)`; no keras-hub task.

    Examples:

    ```python
    backbone = keras_hub.models.RobertaBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=16)
    model = HubTextClassifier(backbone, num_classes=2)
    model.taps(inputs, ["hidden/1", "logits"])
    task = model.to_task()          # a keras_hub.models.RobertaTextClassifier
    again = HubTextClassifier.from_task(task)
    mean = HubTextClassifier(backbone, num_classes=2, pooling="mean")  # no to_task()
    spans = HubTextClassifier(backbone, num_classes=2, per_token=True)  # start, end
    ```
    """

    input_keys = keys.TOKEN_INPUTS
    config_attributes = ("num_classes", "dropout", "pooling", "per_token")

    def __init__(self, backbone, num_classes, dropout=0.1, pooling="cls",
                 per_token=False, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.family = family_of(backbone)
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.per_token = bool(per_token)
        self.pooling = check_pooling(pooling, self.per_token)
        dense = lambda units, name, activation=None: keras.layers.Dense(  # noqa: E731
            units, activation=activation, name=name,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
        hidden = backbone.hidden_dim
        if self.family.head == "classifier_pooler":
            self.pooled_dense = dense(hidden, "pooled_dense",
                                      self.family.pooled_activation)
            self.pooled_dense.build((None, hidden))
        self.pooled_dropout = keras.layers.Dropout(dropout, name="pooled_dropout")
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.classifier = dense(self.num_classes, "logits")
        self.classifier.build((None, hidden))
        if self.per_token:  # a head on every token never reads the pooler:
            # left out of training (no optimizer slots, no Keras warning)
            pooler = (self.pooled_dense if self.family.head == "classifier_pooler"
                      else getattr(backbone, "pooled_dense", None))
            if pooler is not None:
                pooler.trainable = False
        self.built = True

    @property
    def pooler(self):
        """The dense layer on [CLS]: the backbone's own (BERT, ALBERT,
        ELECTRA) or this classifier's `pooled_dense`."""
        if self.family.head == "backbone_pooler":
            return self.backbone.pooled_dense
        return self.pooled_dense

    @property
    def layers_in_order(self):
        return self.family.layers(self.backbone)

    @property
    def num_layers(self):
        return len(self.layers_in_order)

    def available_taps(self):
        taps = transformer_taps(self.num_layers)
        if not self.family.offers_attention:
            taps = [name for name in taps if not name.startswith("attention")]
        return taps

    def offers(self):
        """The taps as error messages list them."""
        attention = ("attention/<i>, attention_scores/<i>, "
                     if self.family.offers_attention else "")
        return (f"embeddings, hidden/1..{self.num_layers}, cls/<i>, {attention}"
                f"pooled, logits (family {self.family.name})")

    def tap_width(self, name):
        return transformer_tap_width(name, self.hidden_dim, self.num_classes)

    def flops_per_example(self, sequence_length):
        """Analytic forward FLOPs of one example: `L (8 S H^2 + 4 S^2 H +
        4 S H I) + 2 H^2 + 2 H C` (every layer in full, the pooler and the
        classifier; embedding lookups and an embedding projection left
        out), for either pooling (the mean itself is no matmul)."""
        s, h = int(sequence_length), self.hidden_dim
        layer = flops.transformer_layer_flops(s, h, self.backbone.intermediate_dim)
        return (self.num_layers * layer + flops.dense_flops(1, h, h)
                + flops.dense_flops(1, h, self.num_classes))

    def taps(self, inputs, names=("logits",), training=False):
        names = check_tap_names(self, names, self.offers())
        padding_mask = inputs["padding_mask"]
        x, layer_kwargs = self.family.embed(self.backbone, inputs, training=training)
        out = {}
        if "embeddings" in names:
            out["embeddings"] = x
        sequence_taps = top_sequence_taps(
            self.num_layers, reads_every_position(self.pooling, self.per_token))
        x = run_encoder(self.layers_in_order, x, names, out, padding_mask,
                        depth_needed(names, self.num_layers), sequence_taps,
                        training=training, layer_kwargs=layer_kwargs,
                        cls_only=self.family.offers_attention)
        if self.per_token and "logits" in names:  # a head on every position
            out["logits"] = self.classifier(self.output_dropout(x, training=training))
            names = names - {"logits"}
        if names & {"pooled", "logits"}:
            sentence = pool_sequence(x, padding_mask, self.pooling)
            if self.family.pooled_dropout:
                sentence = self.pooled_dropout(sentence, training=training)
            pooled = self.pooler(sentence)
            if "pooled" in names:
                out["pooled"] = pooled
            if "logits" in names:
                out["logits"] = self.classifier(
                    self.output_dropout(pooled, training=training))
        return out

    def to_task(self, preprocessor=None):
        """The keras-hub `<Family>TextClassifier` with this model's backbone
        and head weights (logits, no activation), e.g. to `save_to_preset`.

        Raises:
            KdplugError: keras-hub has no text classifier for the family
                (ELECTRA), or the model is mean-pooled (keras-hub's heads
                read [CLS]).
        """
        import keras_hub

        if self.per_token:
            raise KdplugError(
                f"{self.name!r} classifies every token; keras-hub's text "
                "classifiers classify sentences")
        if self.family.classifier is None:
            raise KdplugError(
                f"keras-hub has no text classifier for the {self.family.name} "
                "family, so this model cannot become a keras-hub task (export it "
                "as keras or saved_model)")
        check_cls_head(self, self.family.classifier)
        cls = getattr(keras_hub.models, self.family.classifier)
        task = cls(backbone=self.backbone, num_classes=self.num_classes,
                   preprocessor=preprocessor, dropout=self.dropout)
        task.output_dense.set_weights(self.classifier.get_weights())
        if self.family.head == "classifier_pooler":
            task.pooled_dense.set_weights(self.pooler.get_weights())
        return task

    @classmethod
    def from_task(cls, task, dropout=None, pooling="cls"):
        """A tapped model sharing a keras-hub text classifier's backbone,
        with its head's weights (a fine-tuned head is kept; trained on
        [CLS], it reads other features with `pooling="mean"` until
        fine-tuned)."""
        kernel, bias = task.output_dense.get_weights()
        if task.output_dense.activation not in (None, keras.activations.linear):
            raise KdplugError(
                f"{type(task).__name__} {task.name!r} ends in an activation "
                f"({task.output_dense.activation.__name__}); kdplug's heads return "
                "logits (save the classifier with activation=None)")
        rate = dropout if dropout is not None else getattr(task, "dropout", 0.1)
        model = cls(task.backbone, num_classes=kernel.shape[-1], dropout=rate,
                    pooling=pooling)
        model.classifier.set_weights([kernel, bias])
        if model.family.head == "classifier_pooler":
            model.pooler.set_weights(task.pooled_dense.get_weights())
        return model

