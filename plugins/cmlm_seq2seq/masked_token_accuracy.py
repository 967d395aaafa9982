import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kdplug_cmlm_seq2seq")
class MaskedTokenAccuracy(keras.metrics.Mean):
    """Accuracy over the positions that carry a label (`labels >= 0`).

    `update_state(labels, logits)`: labels `(..., )` ints with `-1` where
    there is nothing to predict (unused mask positions, padding), logits
    `(..., vocabulary)`. The mean of `argmax(logits) == labels` over the
    labelled positions of every batch seen.

    Args:
        name: str. `accuracy` by default, so that a compiled model logs
            `accuracy` / `val_accuracy` (what `early_stopping` watches).

    Examples:

    ```python
    metric = MaskedTokenAccuracy()
    metric.update_state([[3, -1]], logits)   # only the first position counts
    ```
    """

    def __init__(self, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = ops.cast(y_true, "int32")
        mask = ops.cast(ops.greater_equal(labels, 0), "float32")
        if sample_weight is not None:
            mask = mask * ops.cast(sample_weight, "float32")
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        correct = ops.cast(ops.equal(predicted, labels), "float32")
        return super().update_state(correct, sample_weight=mask)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
