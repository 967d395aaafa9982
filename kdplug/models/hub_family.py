"""The keras-hub text families kdplug taps, and what differs between them.

Every family's backbone is the same stack (embeddings, then encoder layers
called with a padding mask) with three family-specific parts: how the
embeddings are formed, how the layers are called (ALBERT repeats shared
groups, DeBERTaV3 passes relative embeddings) and which head keras-hub's
`<Family>TextClassifier` puts on the [CLS] vector. `HubFamily` records
those parts as data; `kdplug.models.HubTextClassifier` runs them.
"""

import dataclasses
from typing import Optional

from kdplug.errors import KdplugError


@dataclasses.dataclass(frozen=True)
class HubFamily:
    """One keras-hub text family as kdplug runs it.

    Args:
        name: the family (`roberta`), as `docs/models.md` names it.
        backbone: the keras-hub backbone class name (`RobertaBackbone`).
        classifier: the keras-hub text classifier class name, None when
            keras-hub has none (ELECTRA): then the exported student cannot
            be a keras-hub preset.
        embeddings: `token_position_segment` (BERT, ELECTRA, ALBERT: three
            embeddings added), `token_and_position` (DistilBERT, RoBERTa,
            XLM-RoBERTa: one `TokenAndPositionEmbedding`) or `token`
            (DeBERTaV3: tokens only, positions enter every layer as
            relative embeddings).
        projection: the backbone's `embeddings_projection` layer name when
            its embeddings are narrower than its layers (ALBERT always,
            ELECTRA when `embedding_dim != hidden_dim`), else None.
        head: `backbone_pooler` (the backbone's own `pooled_dense` on [CLS],
            then dropout and the classifier: BERT, ALBERT, ELECTRA) or
            `classifier_pooler` (the classifier's `pooled_dense` with
            `pooled_activation`, after a dropout when `pooled_dropout`).
        pooled_activation: the activation of the classifier's pooler.
        pooled_dropout: whether a dropout precedes the classifier's pooler.
        attention: whether the layers are keras-hub `TransformerEncoder`s,
            which give `attention/<i>` and `attention_scores/<i>` taps
            (DeBERTaV3's disentangled attention does not).

    Examples:

    ```python
    family = family_of(backbone)
    family.name, family.offers_attention
    ```
    """

    name: str
    backbone: str
    classifier: Optional[str]
    embeddings: str
    head: str
    projection: Optional[str] = None
    pooled_activation: Optional[str] = None
    pooled_dropout: bool = False
    attention: bool = True

    @property
    def offers_attention(self):
        return self.attention

    def embed(self, backbone, inputs, training=False):
        """`(x, layer_kwargs)`: the input of the first layer (embeddings
        summed, normalised, dropped out and projected as the backbone does)
        and the extra arguments every layer call takes."""
        from keras import ops

        token_ids = inputs["token_ids"]
        if self.embeddings == "token_position_segment":
            segment_ids = inputs.get("segment_ids")
            if segment_ids is None:
                segment_ids = ops.zeros_like(token_ids)
            tokens = backbone.token_embedding(token_ids)
            x = backbone.embeddings_add((tokens, backbone.position_embedding(tokens),
                                         backbone.segment_embedding(segment_ids)))
        elif self.embeddings == "token_and_position":
            x = backbone.embeddings(token_ids)
        else:
            x = backbone.token_embedding(token_ids)
        x = backbone.embeddings_dropout(backbone.embeddings_layer_norm(x),
                                        training=training)
        if self.projection and backbone.hidden_dim != _embedding_dim(backbone):
            x = getattr(backbone, self.projection)(x)
        if self.embeddings == "token":
            return x, {"rel_embeddings": backbone.relative_embeddings(x)}
        return x, {}

    def layers(self, backbone):
        """The encoder layers in call order (ALBERT's shared groups
        repeated, so layer `i` of the list is the `i`-th call)."""
        if self.name != "albert":
            return list(backbone.transformer_layers)
        calls = backbone.num_layers // backbone.num_groups
        return [layer for group in backbone.transformer_layers
                for _ in range(calls) for layer in group]


def _embedding_dim(backbone):
    return getattr(backbone, "embedding_dim", backbone.hidden_dim)


_ENCODER_HEAD = {"head": "backbone_pooler"}
FAMILIES = {family.name: family for family in (
    HubFamily("bert", "BertBackbone", "BertTextClassifier",
              "token_position_segment", **_ENCODER_HEAD),
    HubFamily("electra", "ElectraBackbone", None, "token_position_segment",
              projection="embeddings_projection", **_ENCODER_HEAD),
    HubFamily("albert", "AlbertBackbone", "AlbertTextClassifier",
              "token_position_segment", projection="embeddings_projection",
              **_ENCODER_HEAD),
    HubFamily("distil_bert", "DistilBertBackbone", "DistilBertTextClassifier",
              "token_and_position", head="classifier_pooler", pooled_activation="relu"),
    HubFamily("roberta", "RobertaBackbone", "RobertaTextClassifier",
              "token_and_position", head="classifier_pooler",
              pooled_activation="tanh", pooled_dropout=True),
    HubFamily("xlm_roberta", "XLMRobertaBackbone", "XLMRobertaTextClassifier",
              "token_and_position", head="classifier_pooler",
              pooled_activation="tanh", pooled_dropout=True),
    HubFamily("deberta_v3", "DebertaV3Backbone", "DebertaV3TextClassifier", "token",
              head="classifier_pooler", pooled_activation="gelu", pooled_dropout=True,
              attention=False),
)}


def family_of(model):
    """The `HubFamily` of a keras-hub backbone or text classifier (its
    class or a parent class named in `FAMILIES`); a `KdplugError` naming
    the class and the supported families otherwise."""
    backbone = getattr(model, "backbone", model)
    for cls in type(backbone).__mro__:
        for family in FAMILIES.values():
            if cls.__name__ == family.backbone:
                return family
    raise KdplugError(
        f"{type(backbone).__name__} is not a keras-hub text family kdplug taps; "
        f"supported backbones: {', '.join(f.backbone for f in FAMILIES.values())}")
