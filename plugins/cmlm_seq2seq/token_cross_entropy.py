import keras

from kdplug.terms import TokenHardCrossEntropy


@keras.saving.register_keras_serializable(package="kdplug_cmlm_seq2seq")
class TokenCrossEntropy(TokenHardCrossEntropy):
    """Teacher-forced cross-entropy of a sequence student on the gold target
    (maximum likelihood, the paper's `L_xe`): the core's
    `kdplug.terms.TokenHardCrossEntropy` with the paper's label smoothing,
    named `token_ce` (kept as its own registered class so saved configs
    naming `kdplug_cmlm_seq2seq>TokenCrossEntropy` still load).

    For example `i` with labels `y_ij` (the next word piece at decoder
    position `j`, `-1` on padding) and student logits `s_ij`:

    ```
    ce_ij  = - sum_v t_ijv * log softmax(s_ij)[v]
             t_ij = (1 - e) * onehot(y_ij) + e / V   (label smoothing e)
    loss_i = sum_j ce_ij * m_ij / sum_j m_ij          (m_ij = y_ij >= 0)
    ```

    Args:
        weight: float. Weight in the total loss (`1 - alpha`).
        label_smoothing: float in [0, 1).
        tap: str. The student's logits tap.

    Examples:

    ```python
    term = TokenCrossEntropy(weight=0.5, label_smoothing=0.1)
    per_example = term({}, {"logits": logits}, {"labels": labels})
    ```
    """

    def __init__(self, weight=1.0, label_smoothing=0.0, tap="logits", name=None,
                 **kwargs):
        super().__init__(weight=weight, tap=tap, name=name or "token_ce",
                         label_smoothing=label_smoothing, **kwargs)
