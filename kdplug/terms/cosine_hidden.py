import keras
from keras import ops

from kdplug.errors import KdplugError
from kdplug.terms.pairs import check_pairs
from kdplug.terms.pairs import check_widths
from kdplug.terms.pairs import l2_normalize
from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class CosineHidden(Term):
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
        super().__init__(weight=weight, name=name or "cosine_hidden", **kwargs)
        self.pairs = check_pairs(pairs, type(self).__name__)
        self.epsilon = float(epsilon)

    def required_teacher_taps(self):
        return {t for t, _ in self.pairs}

    def required_student_taps(self):
        return {s for _, s in self.pairs}

    def call(self, teacher, student, batch):
        if "padding_mask" not in batch:
            raise KdplugError(f"{self.name}: the batch has no 'padding_mask'")
        mask = ops.cast(batch["padding_mask"], "float32")
        valid = ops.sum(mask, axis=-1)
        total = 0.0
        for t_name, s_name in self.pairs:
            t = ops.cast(teacher[t_name], "float32")
            s = ops.cast(student[s_name], "float32")
            check_widths(t, s, t_name, s_name, self.name)
            cosine = ops.sum(
                l2_normalize(t, self.epsilon) * l2_normalize(s, self.epsilon), axis=-1
            )
            summed = ops.sum((1.0 - cosine) * mask, axis=-1)
            total = total + ops.divide_no_nan(summed, valid)
        return total

    def get_config(self):
        config = super().get_config()
        config.update(
            {"pairs": [list(p) for p in self.pairs], "epsilon": self.epsilon}
        )
        return config

