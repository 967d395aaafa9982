"""What the token-classification terms share: which positions carry a label,
and the mean of a per-position loss over them."""

from keras import ops

from kdplug import keys


def position_mask(batch):
    """`(batch, seq)` float32: 1.0 where a position has a label (`>= 0`: the
    first word piece of a word), 0.0 elsewhere (padding, [CLS]/[SEP],
    continuation pieces, all labelled `-1`).

    Examples:

    ```python
    position_mask({"labels": [[-1, 3, -1, 0, -1]]})  # [[0., 1., 0., 1., 0.]]
    ```
    """
    return ops.cast(ops.greater_equal(batch[keys.LABELS], 0), "float32")


def mean_over_labelled(loss, batch):
    """Per example, the mean of a `(batch, seq)` loss over its labelled
    positions; 0.0 for an example without any.

    Examples:

    ```python
    mean_over_labelled([[2.0, 4.0, 9.0]], {"labels": [[1, 0, -1]]})  # [3.0]
    ```
    """
    mask = position_mask(batch)
    total = ops.sum(ops.cast(loss, "float32") * mask, axis=-1)
    return total / ops.maximum(ops.sum(mask, axis=-1), 1.0)
