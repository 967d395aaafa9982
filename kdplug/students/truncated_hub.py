from kdplug.errors import KdplugError
from kdplug.models import HubTextClassifier
from kdplug.students.truncated_bert import select_layers
from kdplug.students.utils import force_trainable

# A backbone's config entries that describe the object, not its shape.
_NOT_SHAPE = ("name", "trainable")


def truncated_hub(teacher, layers, num_classes, copy_head=True, dropout=0.1,
                  pretrained=None):
    """A shallower model of the teacher's own keras-hub family (DistilBERT,
    RoBERTa, XLM-RoBERTa, ALBERT, ELECTRA, DeBERTaV3), initialised from
    chosen teacher layers: `truncated_bert` for every other family.

    The student's backbone is the teacher's backbone class with
    `num_layers = len(layers)` and the student's dropout, every other
    argument (widths, vocabulary, positions, DeBERTa's buckets) the
    teacher's. Every weight outside the encoder layers (embeddings,
    projections, relative embeddings, a backbone pooler) is copied by layer
    name, and student layer `j` gets teacher layer `layers[j]`. ALBERT
    shares one group of layers across its depth, so its student copies
    that group and only the depth changes (the selected indices are not
    used: every call reads the same weights). The head is copied when
    `copy_head` and the class count match, else new. With `pretrained` (a
    `PretrainedWeights` snapshot) values are read from the teacher before
    fine-tuning. The student pools its sentence as the teacher does
    (`pooling`). Every weight of the student is trainable.

    Args:
        teacher: a `kdplug.models.HubTextClassifier`.
        layers: list of 0-based teacher layer indices.
        num_classes: int. Classes of the student's head.
        copy_head: copy the teacher's head when shapes match.
        dropout: float. Dropout of the student (backbone and head).
        pretrained: optional `PretrainedWeights` of `teacher`.

    Examples:

    ```python
    student = truncated_hub(roberta_teacher, [0, 2, 4], num_classes=2)
    ```
    """
    if not isinstance(teacher, HubTextClassifier):
        raise KdplugError(
            f"truncated_hub needs a HubTextClassifier teacher, got "
            f"{type(teacher).__name__} (BERT teachers: truncated_bert)")
    layers = select_layers(list(layers), teacher.num_layers)  # checked
    src, family = teacher.backbone, teacher.family
    weights_of = pretrained.get_weights if pretrained is not None else (
        lambda layer: layer.get_weights())
    config = {k: v for k, v in src.get_config().items() if k not in _NOT_SHAPE}
    config.update(num_layers=len(layers), dropout=dropout)
    if family.name == "albert" and len(layers) % src.num_groups:
        raise KdplugError(
            f"an ALBERT student's depth ({len(layers)}) must be a multiple of the "
            f"teacher's num_groups ({src.num_groups})")
    backbone = type(src).from_config(config)
    encoder = {id(layer) for layer in _encoder_layers(src)}
    for layer in src.layers:
        if id(layer) not in encoder and layer.weights:
            backbone.get_layer(layer.name).set_weights(weights_of(layer))
    if family.name == "albert":
        for target, source in zip(_encoder_layers(backbone), _encoder_layers(src)):
            target.set_weights(weights_of(source))
    else:
        for target, index in zip(backbone.transformer_layers, layers):
            target.set_weights(weights_of(src.transformer_layers[index]))
    student = HubTextClassifier(backbone, num_classes=num_classes, dropout=dropout,
                                pooling=teacher.pooling,
                                per_token=getattr(teacher, "per_token", False))
    if copy_head and teacher.num_classes == num_classes:
        student.classifier.set_weights(weights_of(teacher.classifier))
        if family.head == "classifier_pooler":
            student.pooled_dense.set_weights(weights_of(teacher.pooled_dense))
    return force_trainable(student)


def _encoder_layers(backbone):
    """A backbone's encoder layers, each once (ALBERT's groups flattened)."""
    layers = []
    for item in backbone.transformer_layers:
        layers.extend(item if isinstance(item, (list, tuple)) else [item])
    return layers
