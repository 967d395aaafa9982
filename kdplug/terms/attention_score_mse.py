import keras
from keras import ops

from kdplug.mapping.head_reduction import check_head_reduction
from kdplug.mapping.head_reduction import match_heads
from kdplug.terms.paired_term import PairedTerm
from kdplug.terms.pairs import check_tap_prefix
from kdplug.terms.pairs import padding_mask


@keras.saving.register_keras_serializable(package="kdplug")
class AttentionScoreMSE(PairedTerm):
    """TinyBERT's attention loss: MSE of unnormalised attention scores.

    Jiao et al. (2020) match each head's pre-softmax attention matrix
    `Q K^T / sqrt(d)` rather than its softmax. For every
    `(teacher_tap, student_tap)` pair of `attention_scores/<i>` taps
    (`(batch, heads, seq, seq)`) the loss of example `i` is

    `loss_i = sum_pairs 1/A sum_a sum_{q,k} m_iq m_ik (T_aqk - S_aqk)^2
              / (sum_q m_iq)^2`

    i.e. the squared error averaged over the valid (query, key) entries of
    each head (both positions not padding, from `batch["padding_mask"]`),
    averaged over the `A` heads, summed over the pairs. Padded keys carry
    `kdplug.models.MASKED_SCORE` in the taps and padded queries arbitrary
    values; both are excluded (with `where`, so huge masked values cannot
    overflow). An example without a valid token contributes zero.

    When the head counts differ, `head_reduction` (`"group"` or `"mean"`,
    see `kdplug.mapping.reduce_heads`) averages the scores of the model
    with more heads; with None the head counts must match (TinyBERT keeps
    the teacher's head count).

    Args:
        pairs: list of `(teacher_tap, student_tap)`, e.g.
            `[("attention_scores/4", "attention_scores/2")]`.
        weight: float. Weight in the total loss.
        head_reduction: None, `"group"` or `"mean"`.
        name: str. Defaults to `"attention_mse"`.

    Examples:

    ```python
    term = AttentionScoreMSE([("attention_scores/4", "attention_scores/2")])
    per_example = term({"attention_scores/4": t}, {"attention_scores/2": s},
                       {"padding_mask": mask})
    ```
    """

    def __init__(self, pairs, weight=1.0, head_reduction=None, name=None,
                 **kwargs):
        super().__init__(pairs, weight=weight, name=name or "attention_mse",
                         **kwargs)
        check_tap_prefix(
            self.pairs, "attention_scores/", type(self).__name__,
            "pre-softmax attention scores (attention_scores/<i> taps)",
        )
        self.head_reduction = check_head_reduction(head_reduction)

    def call(self, teacher, student, batch):
        mask = padding_mask(batch, self.name)  # (B, S)
        entries = mask[:, None, :, None] * mask[:, None, None, :]  # (B, 1, Q, K)
        valid = ops.square(ops.sum(mask, axis=-1))
        keep = ops.greater(entries, 0.0)
        total = 0.0
        for t_name, s_name, t, s in self.float_pairs(teacher, student):
            t, s = match_heads(t, s, t_name, s_name, self.head_reduction,
                               self.name)
            diff = ops.where(keep, s - t, 0.0)
            per_head = ops.sum(ops.square(diff), axis=(2, 3))  # (B, A)
            total = total + ops.divide_no_nan(ops.mean(per_head, axis=1), valid)
        return total

    def get_config(self):
        config = super().get_config()
        config.update({"head_reduction": self.head_reduction})
        return config
