import keras
from keras import ops

from kdplug import keys
from kdplug.terms import Term


@keras.saving.register_keras_serializable(package="kdplug_cmlm_seq2seq")
class TokenCrossEntropy(Term):
    """Teacher-forced cross-entropy of a sequence student on the gold target
    (maximum likelihood, the paper's `L_xe`).

    For example `i` with labels `y_ij` (the next word piece at decoder
    position `j`, `-1` on padding) and student logits `s_ij`:

    ```
    ce_ij  = - sum_v t_ijv * log softmax(s_ij)[v]
             t_ij = (1 - e) * onehot(y_ij) + e / V   (label smoothing e)
    loss_i = sum_j ce_ij * m_ij / sum_j m_ij          (m_ij = y_ij >= 0)
    ```

    With `label_smoothing = 0` (the default) `ce_ij = -log softmax(s_ij)[y_ij]`.
    Each example's loss is the mean over its real target tokens.

    Args:
        weight: float. Weight in the total loss (`1 - alpha`).
        label_smoothing: float in [0, 1).
        tap: str. The student's logits tap.

    Examples:

    ```python
    term = TokenCrossEntropy(weight=0.5)
    per_example = term({}, {"logits": logits}, {"labels": labels})
    ```
    """

    student_taps = ("logits",)

    def __init__(self, weight=1.0, label_smoothing=0.0, tap="logits", name=None,
                 **kwargs):
        super().__init__(weight=weight, name=name or "token_ce", **kwargs)
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        self.label_smoothing = float(label_smoothing)
        self.tap = tap

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        logits = ops.cast(student[self.tap], "float32")
        labels = ops.cast(batch[keys.LABELS], "int32")
        mask = ops.cast(ops.greater_equal(labels, 0), "float32")
        log_q = ops.log_softmax(logits, axis=-1)
        gold = -ops.take_along_axis(log_q, ops.maximum(labels, 0)[..., None],
                                    axis=-1)[..., 0]
        if self.label_smoothing:
            uniform = -ops.mean(log_q, axis=-1)
            gold = (1.0 - self.label_smoothing) * gold + self.label_smoothing * uniform
        return ops.sum(gold * mask, axis=-1) / ops.maximum(ops.sum(mask, axis=-1), 1.0)

    def get_config(self):
        config = super().get_config()
        config.update({"label_smoothing": self.label_smoothing, "tap": self.tap})
        return config
