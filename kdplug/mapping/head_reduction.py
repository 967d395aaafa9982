"""Making attention maps with different head counts comparable."""

from keras import ops

from kdplug.errors import KdplugError

HEAD_REDUCTIONS = ("mean", "group")
"""`mean`: average all heads of each model to one map. `group`: average
consecutive groups of `heads / target_heads` heads (the teacher's, when it has
more) so both sides have the smaller head count."""


def check_head_reduction(head_reduction):
    """Raises unless `head_reduction` is None or one of `HEAD_REDUCTIONS`."""
    if head_reduction is not None and head_reduction not in HEAD_REDUCTIONS:
        raise KdplugError(
            f"unknown head_reduction {head_reduction!r}; known: "
            f"{', '.join(HEAD_REDUCTIONS)}"
        )
    return head_reduction


def match_heads(t, s, t_name, s_name, reduction, owner):
    """Teacher and student `(batch, heads, seq, seq)` maps with equal heads.

    Equal head counts pass through; otherwise both are reduced to the smaller
    count with `reduce_heads` (`reduction` None raises a clear error naming
    the taps `t_name` / `s_name` and `owner`).
    """
    t_heads, s_heads = t.shape[1], s.shape[1]
    if t_heads == s_heads:
        return t, s
    if reduction is None:
        raise KdplugError(
            f"{owner}: teacher tap {t_name!r} has {t_heads} heads but "
            f"student tap {s_name!r} has {s_heads}; set head_reduction to "
            "'group' or 'mean'"
        )
    target = min(t_heads, s_heads)
    return (reduce_heads(t, target, reduction),
            reduce_heads(s, target, reduction))


def reduce_heads(attention, target_heads, reduction):
    """Reduces `(batch, heads, seq, seq)` attention to `target_heads` heads.

    Args:
        attention: attention probabilities or scores.
        target_heads: int. Heads after reduction (ignored by `mean`: 1).
        reduction: `"mean"` or `"group"`.

    Examples:

    ```python
    t = reduce_heads(teacher["attention/4"], 4, "group")  # 12 -> 4 heads
    s = reduce_heads(student["attention/2"], 1, "mean")
    ```
    """
    heads = attention.shape[1]
    if reduction == "mean":
        return ops.mean(attention, axis=1, keepdims=True)
    if reduction == "group":
        if heads % target_heads:
            raise KdplugError(
                f"head_reduction 'group' needs {heads} heads to split into "
                f"{target_heads} equal groups"
            )
        shape = ops.shape(attention)
        grouped = ops.reshape(
            attention,
            (shape[0], target_heads, heads // target_heads, shape[2], shape[3]),
        )
        return ops.mean(grouped, axis=2)
    raise KdplugError(
        f"unknown head_reduction {reduction!r}; known: {', '.join(HEAD_REDUCTIONS)}"
    )
