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


def truncated_bert(teacher, layers, num_classes, copy_head=True, dropout=0.1):
    """A shallower BERT initialised from chosen teacher layers.

    Embeddings, the chosen transformer layers (in order) and the pooler are
    copied from the teacher; the classifier head too when its shape matches.
    The student is built from explicit arguments (never from the teacher's
    `get_config()`, which carries `trainable: False` once the teacher is
    frozen) and every one of its weights is trainable.

    Args:
        teacher: a `BertClassifier`.
        layers: list of 0-based teacher layer indices to copy.
        num_classes: int. Classes of the student's head.
        copy_head: copy the teacher's classifier when shapes match.
        dropout: float. Dropout of the student.

    Examples:

    ```python
    student = truncated_bert(teacher, [0, 2, 4], num_classes=2)
    ```
    """
    src = teacher.backbone
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
        getattr(backbone, name).set_weights(getattr(src, name).get_weights())
    for target, index in zip(backbone.transformer_layers, layers):
        target.set_weights(src.transformer_layers[index].get_weights())
    student = BertClassifier(backbone, num_classes=num_classes, dropout=dropout)
    if copy_head and teacher.num_classes == num_classes:
        student.classifier.set_weights(teacher.classifier.get_weights())
    return force_trainable(student)
