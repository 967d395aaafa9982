import keras
from keras import ops

from kdplug.mapping.head_reduction import check_head_reduction
from kdplug.mapping.head_reduction import match_heads
from kdplug.terms.paired_term import PairedTerm
from kdplug.terms.pairs import check_tap_prefix
from kdplug.terms.pairs import masked_token_mean
from kdplug.terms.pairs import padding_mask


@keras.saving.register_keras_serializable(package="kdplug")
class AttentionTransfer(PairedTerm):
    """MobileBERT's attention transfer (Sun et al. 2020): KL per head and query.

    For every `(teacher_tap, student_tap)` pair of attention-probability taps
    (`attention/<i>`, shape `(batch, heads, seq, seq)`, each row a softmax
    over keys) the loss of example `i` is

    `loss_i = sum_pairs 1/A sum_a 1/|Q_i| sum_{q in Q_i}
              sum_{k in K_i} t_aqk (log t_aqk - log s_aqk)`

    i.e. `KL(teacher || student)` of each head's attention distribution,
    averaged over the heads `a` and over the valid query positions `Q_i`,
    where the sum runs over the valid keys `K_i` only (both from
    `batch["padding_mask"]`), summed over the pairs. Padded keys hold (near)
    zero probability in both models; leaving them out keeps the student's
    arbitrary values there from mattering. An example without a valid token
    contributes zero. Probabilities are clipped at `epsilon` inside the log.

    When the head counts differ, `head_reduction` makes them comparable (see
    `kdplug.mapping.reduce_heads`): `"group"` averages consecutive groups of
    heads of the model with more heads down to the smaller count, `"mean"`
    averages all heads of each model to one map. Averaging distributions
    gives distributions, so the KL stays well defined.

    Args:
        pairs: list of `(teacher_tap, student_tap)`, e.g.
            `[("attention/3", "attention/3")]`.
        weight: float. Weight in the total loss.
        head_reduction: None, `"group"` or `"mean"`. None requires equal head
            counts.
        epsilon: float. Floor on probabilities inside the logarithm.
        name: str. Defaults to `"attention_kl"`.

    Examples:

    ```python
    term = AttentionTransfer([("attention/2", "attention/2")])
    per_example = term({"attention/2": t}, {"attention/2": s},
                       {"padding_mask": mask})
    ```
    """

    def __init__(self, pairs, weight=1.0, head_reduction=None, epsilon=1e-12,
                 name=None, **kwargs):
        super().__init__(pairs, weight=weight, name=name or "attention_kl",
                         **kwargs)
        check_tap_prefix(
            self.pairs, "attention/", type(self).__name__,
            "attention probabilities (attention/<i> taps)",
        )
        self.head_reduction = check_head_reduction(head_reduction)
        self.epsilon = float(epsilon)

    def call(self, teacher, student, batch):
        mask = padding_mask(batch, self.name)  # (B, S)
        keys = mask[:, None, None, :]
        valid = ops.sum(mask, axis=-1)
        total = 0.0
        for t_name, s_name, t, s in self.float_pairs(teacher, student):
            t, s = match_heads(t, s, t_name, s_name, self.head_reduction,
                               self.name)
            log_t = ops.log(ops.maximum(t, self.epsilon))
            log_s = ops.log(ops.maximum(s, self.epsilon))
            kl = ops.sum(t * (log_t - log_s) * keys, axis=-1)  # (B, A, Q)
            per_query = ops.mean(kl, axis=1)  # average over heads
            total = total + masked_token_mean(per_query, mask, valid)
        return total

    def get_config(self):
        config = super().get_config()
        config.update(
            {"head_reduction": self.head_reduction, "epsilon": self.epsilon}
        )
        return config
