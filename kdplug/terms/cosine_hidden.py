import keras
from keras import ops

from kdplug.terms.paired_term import PairedTerm
from kdplug.terms.pairs import l2_normalize


@keras.saving.register_keras_serializable(package="kdplug")
class CosineHidden(PairedTerm):
    """DistilBERT's cosine embedding loss between hidden states (Sanh et al. 2019).

    For every `(teacher_tap, student_tap)` pair and every token `l` the loss
    is `1 - cos(t_l, s_l)`; padding tokens (`batch["padding_mask"] == 0`)
    are excluded and the loss is averaged over each example's valid tokens,
    then summed over the pairs:

    `loss_i = sum_pairs sum_l m_il (1 - cos(t_il, s_il)) / sum_l m_il`

    An example without any valid token contributes zero. Teacher and student
    widths must match (DistilBERT's student keeps the teacher's width);
    students of another width need a projection first.

    Args:
        pairs: list of `(teacher_tap, student_tap)` pairs of hidden-state
            taps of shape `(batch, seq, hidden)`, e.g.
            `[("hidden/6", "hidden/3")]`.
        weight: float. Weight in the total loss.
        epsilon: float. Floor on squared norms when normalising.

    Examples:

    ```python
    term = CosineHidden([("hidden/6", "hidden/3")], weight=1.0)
    per_example = term({"hidden/6": t}, {"hidden/3": s},
                       {"padding_mask": mask})
    ```
    """

    def __init__(self, pairs, weight=1.0, epsilon=1e-12, name=None, **kwargs):
        super().__init__(pairs, weight=weight, name=name or "cosine_hidden",
                         **kwargs)
        self.epsilon = float(epsilon)

    def per_token(self, t, s):
        cosine = ops.sum(
            l2_normalize(t, self.epsilon) * l2_normalize(s, self.epsilon), axis=-1)
        return 1.0 - cosine

    def call(self, teacher, student, batch):
        return self.token_mean_over_pairs(teacher, student, batch, self.per_token)

    def get_config(self):
        config = super().get_config()
        config.update({"epsilon": self.epsilon})
        return config

