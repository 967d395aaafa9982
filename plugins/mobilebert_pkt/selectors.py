"""Stage `trainable` selectors: which parts of a student train in a stage.

A selector is called as `selector(student)` before the stage's Distiller is
built; it sets every part of the student (embeddings, each block, head)
trainable or frozen explicitly, so it does not rely on the previous stage's
state. Only the student's own layers are touched: the model objects that
contain them stay trainable, otherwise Keras would hide every weight below.
"""

import functools

from kdplug.errors import KdplugError

PART_NAMES = ("embeddings", "blocks", "head")


def student_parts(student):
    """The student's layers grouped as `{"embeddings", "blocks", "head"}`.

    `blocks` is the list of transformer blocks in order (block `l` is
    `blocks[l - 1]`); `embeddings` and `head` (pooler and classifier) are
    lists of layers. Every weight of the student belongs to exactly one part.
    Works for `BottleneckBertClassifier` (the `bottleneck` student) and
    `BertClassifier` (`truncated`, `narrow`).

    Args:
        student: a `BottleneckBertClassifier` or `BertClassifier`.

    Examples:

    ```python
    parts = student_parts(student)
    len(parts["blocks"]) == student.num_layers
    ```
    """
    if hasattr(student, "blocks") and hasattr(student, "token_embedding"):
        embeddings = [
            student.token_embedding, student.embedding_projection,
            student.position_embedding, student.segment_embedding,
            student.embeddings_norm,
        ]
        parts = {
            "embeddings": [layer for layer in embeddings if layer is not None],
            "blocks": list(student.blocks),
            "head": [student.pooled_dense, student.classifier],
        }
    elif hasattr(student, "backbone") and hasattr(student.backbone,
                                                  "transformer_layers"):
        bb = student.backbone
        parts = {
            "embeddings": [bb.token_embedding, bb.position_embedding,
                           bb.segment_embedding, bb.embeddings_layer_norm],
            "blocks": list(bb.transformer_layers),
            "head": [bb.pooled_dense, student.classifier],
        }
    else:
        raise KdplugError(
            f"{type(student).__name__} {student.name!r} has no transformer "
            "blocks to train layer by layer; use a bottleneck, truncated or "
            "narrow student"
        )
    covered = {id(w) for layers in parts.values() for layer in layers
               for w in layer.weights}
    stray = [w.path for w in student.weights if id(w) not in covered]
    if stray:
        raise KdplugError(
            f"{type(student).__name__} {student.name!r} has weights outside "
            f"its embeddings, blocks and head: {stray[:5]}"
        )
    return parts


def set_trainable(student, embeddings=False, blocks=(), head=False):
    """Makes exactly the named parts trainable and freezes every other one.

    Args:
        student: see `student_parts`.
        embeddings: bool. Train the embedding layers.
        blocks: iterable of 1-based block indices to train.
        head: bool. Train the pooler and the classifier.

    Examples:

    ```python
    set_trainable(student, embeddings=True, blocks=[1])  # MobileBERT stage 1
    ```
    """
    for container in (student, getattr(student, "backbone", None)):
        if container is not None and not container.trainable:
            container.trainable = True  # else Keras hides every weight below
    parts = student_parts(student)
    blocks = {int(b) for b in blocks}
    bad = sorted(b for b in blocks if not 1 <= b <= len(parts["blocks"]))
    if bad:
        raise KdplugError(
            f"block(s) {bad} do not exist: the student has "
            f"{len(parts['blocks'])} blocks (1..{len(parts['blocks'])})"
        )
    for layer in parts["embeddings"]:
        _set(layer, embeddings)
    for index, layer in enumerate(parts["blocks"], start=1):
        _set(layer, index in blocks)
    for layer in parts["head"]:
        _set(layer, head)


def _set(layer, value):
    # On the TensorFlow backend `layer.trainable = v` is a no-op when
    # `layer.trainable` already is `v` (the tracking `__setattr__` short-
    # circuits before the property setter), so it does not reach sublayers
    # frozen on their own; set every nested layer explicitly.
    for sub in layer._flatten_layers(include_self=True):
        sub.trainable = bool(value)


def _train_block(student, layer, embeddings):
    set_trainable(student, embeddings=embeddings, blocks=[layer])


def train_block(layer, embeddings=False):
    """A selector training block `layer` (1-based) only, plus the embeddings
    when `embeddings` is true (MobileBERT's progressive stage `layer`).

    Blocks below are frozen, blocks above, the pooler and the classifier get
    no gradient from layer-`layer` losses and are frozen too.

    Args:
        layer: int. The block to train, 1-based.
        embeddings: bool. Also train the embeddings.

    Examples:

    ```python
    Stage("layer_2", terms, trainable=train_block(2))
    ```
    """
    return functools.partial(_train_block, layer=int(layer),
                             embeddings=bool(embeddings))


def _train_lower(student, layer):
    set_trainable(student, embeddings=True, blocks=range(1, layer + 1))


def train_lower(layer):
    """A selector training the embeddings and blocks `1 .. layer` (MobileBERT's
    progressive stage `layer` as the reference code runs it, with
    `if_freeze_previous_layers: false`: the layers below keep training).

    Blocks above, the pooler and the classifier get no gradient from
    layer-`layer` losses and are frozen.

    Args:
        layer: int. The highest block to train, 1-based.

    Examples:

    ```python
    Stage("layer_2", terms, trainable=train_lower(2))
    ```
    """
    return functools.partial(_train_lower, layer=int(layer))


def train_all(student):
    """A selector training every part of the student (used by the final
    stage, so it does not depend on how the previous stage was undone).

    Args:
        student: see `student_parts`.

    Examples:

    ```python
    Stage("distill", terms, trainable=train_all)
    ```
    """
    set_trainable(student, embeddings=True,
                  blocks=range(1, len(student_parts(student)["blocks"]) + 1),
                  head=True)


def train_body(student):
    """A selector training embeddings and every block, not the pooler or
    classifier (for stages whose losses only read hidden states and
    attention maps).

    Args:
        student: see `student_parts`.

    Examples:

    ```python
    Stage("joint", layer_terms, trainable=train_body)
    ```
    """
    set_trainable(student, embeddings=True,
                  blocks=range(1, len(student_parts(student)["blocks"]) + 1))
