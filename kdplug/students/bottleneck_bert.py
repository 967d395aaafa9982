from kdplug.errors import KdplugError
from kdplug.models import BottleneckBertClassifier
from kdplug.students.utils import force_trainable

PRESETS = {
    # MobileBERT's proportions (intra 128, FFN 512, 4 heads, 4 stacked FFNs,
    # 128-wide trigram embeddings), inter-block width taken from the teacher.
    "default": dict(intra_dim=128, num_heads=4, intermediate_dim=512,
                    num_feedforward=4, embedding_dim=128),
    # A smaller variant in the spirit of MobileBERT-TINY: narrower inside,
    # two stacked FFNs, 64-wide embeddings.
    "tiny": dict(intra_dim=64, num_heads=4, intermediate_dim=256,
                 num_feedforward=2, embedding_dim=64),
}


def bottleneck_bert(vocabulary_size, num_classes, hidden_dim, num_layers,
                    preset="default", max_sequence_length=512, num_segments=2,
                    dropout=0.1, pooling="cls", **overrides):
    """A randomly initialised MobileBERT-style student.

    `hidden_dim` (the inter-block width) should be the teacher's hidden size
    and `num_layers` its depth, so that layer `i` of the student can learn
    layer `i`'s feature map without a projection (MobileBERT's layer-wise
    transfer). A preset gives the intra-block shape; keyword overrides
    (`intra_dim`, `num_heads`, `intermediate_dim`, `num_feedforward`,
    `embedding_dim`, `trigram_embeddings`, `activation`) replace single
    values.

    Args:
        vocabulary_size: int.
        num_classes: int.
        hidden_dim: int. Inter-block width.
        num_layers: int.
        preset: `"default"` or `"tiny"` (see `PRESETS`).
        max_sequence_length: int.
        num_segments: int.
        dropout: float.
        pooling: `"cls"` or `"mean"`: what the pooler reads
            (`BottleneckBertClassifier`); give the teacher's.
        **overrides: `BottleneckBertClassifier` arguments.

    Examples:

    ```python
    student = bottleneck_bert(30522, 2, hidden_dim=384, num_layers=6,
                              preset="tiny")
    ```
    """
    if preset not in PRESETS:
        raise KdplugError(
            f"unknown bottleneck preset {preset!r}; known: {sorted(PRESETS)}"
        )
    args = dict(PRESETS[preset])
    args.update({k: v for k, v in overrides.items() if v is not None})
    if args["intra_dim"] % args["num_heads"]:
        raise KdplugError(
            f"intra_dim {args['intra_dim']} must be divisible by num_heads "
            f"{args['num_heads']}"
        )
    student = BottleneckBertClassifier(
        vocabulary_size=vocabulary_size,
        num_classes=num_classes,
        num_layers=num_layers,
        hidden_dim=hidden_dim,
        max_sequence_length=max_sequence_length,
        num_segments=num_segments,
        dropout=dropout,
        pooling=pooling,
        **args,
    )
    return force_trainable(student)
