import keras

from kdplug.terms.span_positions import span_cross_entropy


@keras.saving.register_keras_serializable(package="kdplug")
class SpanCrossEntropyLoss(keras.losses.Loss):
    """BERT's SQuAD loss as a Keras loss, for `model.fit` (the teacher's
    fine-tuning on extractive QA): per window the mean of the start and end
    cross-entropies, `y_true` the `(batch, 4)` window labels (start, end,
    window id, length), `y_pred` the `(batch, seq, 2)` logits
    (`kdplug.terms.span_positions.span_cross_entropy`); padding left out.

    Args:
        name: str.
        reduction: a Keras reduction (the batch mean by default).

    Examples:

    ```python
    teacher.compile(optimizer="adam", loss=SpanCrossEntropyLoss())
    ```
    """

    def __init__(self, name="span_cross_entropy", reduction="sum_over_batch_size",
                 dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        return span_cross_entropy(y_true, y_pred)
