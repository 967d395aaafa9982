"""Helpers shared by terms that compare (teacher tap, student tap) pairs."""

from keras import ops

from kdplug.errors import KdplugError


def check_pairs(pairs, owner):
    """Validates a list of `(teacher_tap, student_tap)` pairs; returns a tuple.

    Examples:

    >>> check_pairs([["cls/2", "cls/1"]], "NormalizedClsMSE")
    (('cls/2', 'cls/1'),)
    """
    checked = []
    for pair in pairs:
        if isinstance(pair, str) or len(pair) != 2:
            raise KdplugError(
                f"{owner}: pairs must be (teacher_tap, student_tap) pairs, "
                f"got {pair!r}"
            )
        checked.append((str(pair[0]), str(pair[1])))
    if not checked:
        raise KdplugError(f"{owner}: needs at least one (teacher, student) pair")
    return tuple(checked)


def check_widths(t, s, t_name, s_name, owner):
    """Raises a clear error when two taps' last-axis widths differ."""
    tw, sw = t.shape[-1], s.shape[-1]
    if tw is not None and sw is not None and tw != sw:
        raise KdplugError(
            f"{owner}: teacher tap {t_name!r} has width {tw} but student tap "
            f"{s_name!r} has width {sw}; project the student's states first"
        )


def l2_normalize(x, epsilon=1e-12):
    """`x / max(||x||, sqrt(epsilon))` along the last axis."""
    squared = ops.sum(ops.square(x), axis=-1, keepdims=True)
    return x * ops.rsqrt(ops.maximum(squared, epsilon))


def check_tap_prefix(pairs, prefix, owner, what):
    """Raises unless every tap of `pairs` starts with `prefix`.

    `what` describes the taps in the error, e.g. `"attention probabilities
    (attention/<i> taps)"`.
    """
    for t_name, s_name in pairs:
        for tap in (t_name, s_name):
            if not tap.startswith(prefix):
                raise KdplugError(f"{owner} compares {what}, got {tap!r}")


def padding_mask(batch, owner):
    """`batch["padding_mask"]` as float32 `(batch, seq)`; raises if missing."""
    if "padding_mask" not in batch:
        raise KdplugError(f"{owner}: the batch has no 'padding_mask'")
    return ops.cast(batch["padding_mask"], "float32")


def masked_token_mean(per_token, mask, valid):
    """Averages `(batch, seq)` values over each example's valid tokens.

    `valid` is `ops.sum(mask, axis=-1)`; an example without a valid token
    gives zero.
    """
    return ops.divide_no_nan(ops.sum(per_token * mask, axis=-1), valid)
