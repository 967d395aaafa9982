import keras_hub

from kdplug.errors import KdplugError
from kdplug.models import BertClassifier
from kdplug.students.utils import force_trainable


def select_layers(spec, num_teacher_layers, num_layers=None):
    """Resolves a layer spec into 0-based teacher layer indices.

    Args:
        spec: `"every_other"` (0, 2, 4, ... as in DistilBERT), `"first_k"`
            (the first `num_layers`, as in PKD) or an explicit list of
            0-based indices.
        num_teacher_layers: int. Depth of the teacher.
        num_layers: int. Student depth, for `first_k` / `every_other`.

    Examples:

    >>> select_layers("every_other", 6)
    [0, 2, 4]
    >>> select_layers("first_k", 6, num_layers=3)
    [0, 1, 2]
    """
    if spec == "every_other":
        layers = list(range(0, num_teacher_layers, 2))
        if num_layers is not None:
            layers = layers[:num_layers]
    elif spec == "first_k":
        if not num_layers:
            raise KdplugError("layers: first_k needs num_layers")
        layers = list(range(num_layers))
    elif isinstance(spec, (list, tuple)):
        layers = [int(i) for i in spec]
    else:
        raise KdplugError(
            f"layers must be 'every_other', 'first_k' or a list of indices, "
            f"got {spec!r}"
        )
    bad = [i for i in layers if not 0 <= i < num_teacher_layers]
    if bad or not layers:
        raise KdplugError(
            f"layers {layers} must be non-empty 0-based indices below the "
            f"teacher's {num_teacher_layers} layers"
        )
    return layers


def truncated_bert(teacher, layers, num_classes, copy_head=True, dropout=0.1,
                   pretrained=None):
    """A shallower BERT initialised from chosen teacher layers.

    Embeddings, the chosen transformer layers (in order) and the pooler are
    copied from the teacher; the classifier head too when `copy_head` and
    its shape matches, else the head is freshly initialised. With
    `pretrained` (the teacher's weights before fine-tuning, a
    `kdplug.plugin.student_kind.PretrainedWeights`) the values are read
    from that snapshot instead of the teacher's current (fine-tuned) ones:
    PKD (Sun et al. 2019) and DistilBERT (Sanh et al. 2019) start their
    students from the *pre-trained* model's layers, with a new classifier.
    The student is built from explicit arguments (never from the teacher's
    `get_config()`, which carries `trainable: False` once the teacher is
    frozen) and every one of its weights is trainable. It classifies as the
    teacher does: per token with a per-token teacher, its sentence pooled
    the teacher's way (`pooling`: [CLS] or the mean of every real token).

    Args:
        teacher: a `BertClassifier`.
        layers: list of 0-based teacher layer indices to copy.
        num_classes: int. Classes of the student's head.
        copy_head: copy the teacher's classifier when shapes match.
        dropout: float. Dropout of the student.
        pretrained: optional `PretrainedWeights` of `teacher` to copy from.

    Examples:

    ```python
    student = truncated_bert(teacher, [0, 2, 4], num_classes=2)
    # PKD's recipe: the pre-trained first 3 layers and a fresh classifier
    student = truncated_bert(teacher, [0, 1, 2], 2, copy_head=False,
                             pretrained=PretrainedWeights(teacher))
    ```
    """
    src = teacher.backbone
    weights_of = pretrained.get_weights if pretrained is not None else (
        lambda layer: layer.get_weights())
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=src.vocabulary_size,
        num_layers=len(layers),
        num_heads=src.num_heads,
        hidden_dim=src.hidden_dim,
        intermediate_dim=src.intermediate_dim,
        dropout=dropout,
        max_sequence_length=src.max_sequence_length,
        num_segments=src.num_segments,
        dtype=src.dtype_policy,
    )
    for name in ("token_embedding", "position_embedding", "segment_embedding",
                 "embeddings_layer_norm", "pooled_dense"):
        getattr(backbone, name).set_weights(weights_of(getattr(src, name)))
    for target, index in zip(backbone.transformer_layers, layers):
        target.set_weights(weights_of(src.transformer_layers[index]))
    # A per-token teacher (token classification) gets a per-token student,
    # a mean-pooled one a mean-pooled student.
    student = BertClassifier(backbone, num_classes=num_classes, dropout=dropout,
                             per_token=getattr(teacher, "per_token", False),
                             pooling=getattr(teacher, "pooling", "cls"))
    if copy_head and teacher.num_classes == num_classes:
        student.classifier.set_weights(weights_of(teacher.classifier))
    return force_trainable(student)
