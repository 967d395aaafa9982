import keras
from keras import ops

from kdplug.errors import KdplugError
from kdplug.mapping.head_reduction import HEAD_REDUCTIONS
from kdplug.mapping.head_reduction import reduce_heads
from kdplug.terms.pairs import check_pairs
from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class AttentionScoreMSE(Term):
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
        super().__init__(weight=weight, name=name or "attention_mse", **kwargs)
        self.pairs = check_pairs(pairs, type(self).__name__)
        for t_name, s_name in self.pairs:
            for tap in (t_name, s_name):
                if not tap.startswith("attention_scores/"):
                    raise KdplugError(
                        f"{type(self).__name__} compares pre-softmax attention "
                        f"scores (attention_scores/<i> taps), got {tap!r}"
                    )
        if head_reduction is not None and head_reduction not in HEAD_REDUCTIONS:
            raise KdplugError(
                f"unknown head_reduction {head_reduction!r}; known: "
                f"{', '.join(HEAD_REDUCTIONS)}"
            )
        self.head_reduction = head_reduction

    def required_teacher_taps(self):
        return {t for t, _ in self.pairs}

    def required_student_taps(self):
        return {s for _, s in self.pairs}

    def _match_heads(self, t, s, t_name, s_name):
        t_heads, s_heads = t.shape[1], s.shape[1]
        if t_heads == s_heads:
            return t, s
        if self.head_reduction is None:
            raise KdplugError(
                f"{self.name}: teacher tap {t_name!r} has {t_heads} heads but "
                f"student tap {s_name!r} has {s_heads}; set head_reduction to "
                "'group' or 'mean'"
            )
        target = min(t_heads, s_heads)
        return (reduce_heads(t, target, self.head_reduction),
                reduce_heads(s, target, self.head_reduction))

    def call(self, teacher, student, batch):
        if "padding_mask" not in batch:
            raise KdplugError(f"{self.name}: the batch has no 'padding_mask'")
        mask = ops.cast(batch["padding_mask"], "float32")  # (B, S)
        entries = mask[:, None, :, None] * mask[:, None, None, :]  # (B, 1, Q, K)
        valid = ops.square(ops.sum(mask, axis=-1))
        keep = ops.greater(entries, 0.0)
        total = 0.0
        for t_name, s_name in self.pairs:
            t = ops.cast(teacher[t_name], "float32")
            s = ops.cast(student[s_name], "float32")
            t, s = self._match_heads(t, s, t_name, s_name)
            diff = ops.where(keep, s - t, 0.0)
            per_head = ops.sum(ops.square(diff), axis=(2, 3))  # (B, A)
            total = total + ops.divide_no_nan(ops.mean(per_head, axis=1), valid)
        return total

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "pairs": [list(p) for p in self.pairs],
                "head_reduction": self.head_reduction,
            }
        )
        return config
