"""Helpers shared by the student builders."""

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


def teacher_attribute(teacher, name):
    """`teacher.<name>` or `teacher.backbone.<name>` (e.g. vocabulary_size)."""
    for obj in (teacher, getattr(teacher, "backbone", None)):
        if obj is not None and getattr(obj, name, None) is not None:
            return getattr(obj, name)
    raise KdplugError(
        f"the teacher ({type(teacher).__name__}) has no {name!r}; pass it in "
        "the student config"
    )
