"""Helpers shared by the student builders."""

from kdplug.errors import ConfigError
from kdplug.errors import KdplugError


def force_trainable(model):
    """Makes every layer of `model` trainable and checks it worked.

    Students are always built from explicit constructor arguments, never from
    a (possibly frozen) teacher's `get_config()`; this is the second guard
    against a student that silently trains only its head.

    Returns:
        the model.
    """
    model.trainable = True
    for layer in model._flatten_layers():
        layer.trainable = True
    frozen = [w.path for w in model.non_trainable_weights]
    if frozen or not model.trainable_weights:
        raise KdplugError(
            f"student {model.name!r} has non-trainable weights {frozen[:5]}"
        )
    return model


def teacher_attribute(teacher, name, option=None):
    """`teacher.<name>` or `teacher.backbone.<name>` (e.g. vocabulary_size).

    A teacher without it (a RoBERTa teacher has no `num_segments`: no
    segment embeddings) is a `ConfigError` whose fix exists: set
    `student.<option>` when the student kind has that option, else choose
    a student kind that does not build on the teacher's BERT shape.

    Args:
        teacher: the teacher model.
        name: the attribute.
        option: the student config's field that gives the value instead
            (None: the kind has none).

    Examples:

    ```python
    max_len = cfg.max_sequence_length or teacher_attribute(
        teacher, "max_sequence_length", option="max_sequence_length")
    ```
    """
    for obj in (teacher, getattr(teacher, "backbone", None)):
        if obj is not None and getattr(obj, name, None) is not None:
            return getattr(obj, name)
    family = getattr(getattr(teacher, "family", None), "name", None)
    which = f"{family}, {type(teacher).__name__}" if family else type(teacher).__name__
    if option is not None:
        raise ConfigError(f"the teacher ({which}) has no {name!r} to copy; set it",
                          None, f"student.{option}")
    raise ConfigError(
        f"the teacher ({which}) has no {name!r}, which this student kind copies "
        "from it (it builds a BERT on the teacher's inputs); for this teacher "
        "choose `truncated` (the teacher's own layers, any family) or `hub` "
        "(any keras-hub model, e.g. a small BERT, with its own tokenizer)",
        None, "student.kind")
