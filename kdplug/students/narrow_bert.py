import keras_hub

from kdplug.models import BertClassifier
from kdplug.students.utils import force_trainable


def narrow_bert(vocabulary_size, num_classes, num_layers=4, hidden_dim=312,
                intermediate_dim=1200, num_heads=12, max_sequence_length=512,
                num_segments=2, dropout=0.1, per_token=False, pooling="cls"):
    """A randomly initialised, narrower and shallower BERT (TinyBERT-style).

    The defaults are TinyBERT-4's shape (4 layers, hidden 312, FFN 1200, 12
    heads). It is a keras-hub `BertBackbone` inside a `BertClassifier`, so it
    has every BERT tap; `hidden/<i>` is `hidden_dim` wide, so matching a
    teacher's hidden states needs a projection
    (`kdplug.mapping.projection_builder`). It shares the teacher's WordPiece
    vocabulary (same `token_ids`); factorised embeddings are not offered (see
    the `bottleneck` student for those).

    Args:
        vocabulary_size: int. The teacher's vocabulary size.
        num_classes: int.
        num_layers: int.
        hidden_dim: int. Divisible by `num_heads`.
        intermediate_dim: int.
        num_heads: int.
        max_sequence_length: int.
        num_segments: int.
        dropout: float.
        per_token: bool. Classify every position (token classification,
            `BertClassifier(per_token=True)`); give the teacher's.
        pooling: `"cls"` or `"mean"`: what the sentence head reads
            (`BertClassifier`); give the teacher's.

    Examples:

    ```python
    student = narrow_bert(30522, num_classes=2)  # TinyBERT-4 shape
    ```
    """
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=num_layers,
        num_heads=num_heads,
        hidden_dim=hidden_dim,
        intermediate_dim=intermediate_dim,
        dropout=dropout,
        max_sequence_length=max_sequence_length,
        num_segments=num_segments,
    )
    student = BertClassifier(backbone, num_classes=num_classes, dropout=dropout,
                             per_token=per_token, pooling=pooling)
    return force_trainable(student)
