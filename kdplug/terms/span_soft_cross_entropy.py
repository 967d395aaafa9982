import keras
from keras import ops

from kdplug.terms.soft_target_cross_entropy import SoftTargetCrossEntropy
from kdplug.terms.span_positions import labels_of
from kdplug.terms.span_positions import span_logits


@keras.saving.register_keras_serializable(package="kdplug")
class SpanSoftCrossEntropy(SoftTargetCrossEntropy):
    """Soft-target cross-entropy of the answer start and end distributions
    (extractive question answering): the prediction-layer term of
    DistilBERT's and TinyBERT's SQuAD recipes, softmax over the window's
    positions rather than over classes.

    Reads `(batch, seq, 2)` logits of both models (start, end) and the
    batch's `(batch, 4)` window labels, whose length column leaves the
    padding out. Per window, with `t_k`, `s_k` the teacher's and student's
    start (`k = 0`) and end (`k = 1`) logits over its positions:

    ```
    loss = T^2 / 2 * sum_k sum_j softmax(t_k/T)_j * -log softmax(s_k/T)_j
    ```

    (DistilBERT's run_squad_w_distillation sums the start and end KL
    divergences and halves them; this is the cross-entropy, which differs by
    the teacher's entropy and has the same gradients.) The temperature is a
    non-trainable variable (schedulable), as in `SoftTargetCrossEntropy`.

    Args:
        temperature: float. Softmax temperature `T` (> 0).
        weight: float. Weight in the total loss.
        tap: str. The per-token logits tap to compare.

    Examples:

    ```python
    term = SpanSoftCrossEntropy(temperature=2.0, weight=0.5)
    per_example = term({"logits": t}, {"logits": s}, {"labels": labels})
    ```
    """

    def __init__(self, temperature=1.0, weight=1.0, tap="logits", name=None,
                 **kwargs):
        kwargs.pop("class_mean", None)
        super().__init__(temperature=temperature, weight=weight, tap=tap,
                         name=name or "span_soft_ce", **kwargs)

    def call(self, teacher, student, batch):
        t, s = self.logits(teacher, student)
        labels = labels_of(batch)
        temp = ops.cast(self.temperature, "float32")
        total = 0.0
        for t_side, s_side in zip(span_logits(t, labels), span_logits(s, labels)):
            p_teacher = ops.softmax(t_side / temp, axis=-1)
            log_q = ops.log_softmax(s_side / temp, axis=-1)
            total = total - ops.sum(p_teacher * log_q, axis=-1)
        return total * temp * temp / 2.0
