import keras
from keras import ops

from kdplug.errors import KdplugError
from kdplug.mapping.head_reduction import HEAD_REDUCTIONS
from kdplug.mapping.head_reduction import reduce_heads
from kdplug.terms.pairs import check_pairs
from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class AttentionTransfer(Term):
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
        super().__init__(weight=weight, name=name or "attention_kl", **kwargs)
        self.pairs = check_pairs(pairs, type(self).__name__)
        for t_name, s_name in self.pairs:
            for tap in (t_name, s_name):
                if not tap.startswith("attention/"):
                    raise KdplugError(
                        f"{type(self).__name__} compares attention "
                        f"probabilities (attention/<i> taps), got {tap!r}"
                    )
        if head_reduction is not None and head_reduction not in HEAD_REDUCTIONS:
            raise KdplugError(
                f"unknown head_reduction {head_reduction!r}; known: "
                f"{', '.join(HEAD_REDUCTIONS)}"
            )
        self.head_reduction = head_reduction
        self.epsilon = float(epsilon)

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
        keys = mask[:, None, None, :]
        valid = ops.sum(mask, axis=-1)
        total = 0.0
        for t_name, s_name in self.pairs:
            t = ops.cast(teacher[t_name], "float32")
            s = ops.cast(student[s_name], "float32")
            t, s = self._match_heads(t, s, t_name, s_name)
            log_t = ops.log(ops.maximum(t, self.epsilon))
            log_s = ops.log(ops.maximum(s, self.epsilon))
            kl = ops.sum(t * (log_t - log_s) * keys, axis=-1)  # (B, A, Q)
            per_query = ops.mean(kl, axis=1)  # average over heads
            total = total + ops.divide_no_nan(
                ops.sum(per_query * mask, axis=-1), valid
            )
        return total

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "pairs": [list(p) for p in self.pairs],
                "head_reduction": self.head_reduction,
                "epsilon": self.epsilon,
            }
        )
        return config
