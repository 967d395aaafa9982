"""Making attention maps with different head counts comparable."""

from keras import ops

from kdplug.errors import KdplugError

HEAD_REDUCTIONS = ("mean", "group")
"""`mean`: average all heads of each model to one map. `group`: average
consecutive groups of `heads / target_heads` heads (the teacher's, when it has
more) so both sides have the smaller head count."""


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
