import keras
from keras import ops

from kdplug.terms.paired_term import PairedTerm
from kdplug.terms.pairs import check_widths
from kdplug.terms.pairs import l2_normalize


@keras.saving.register_keras_serializable(package="kdplug")
class NormalizedClsMSE(PairedTerm):
    """PKD's patient loss between normalised [CLS] vectors (Sun et al. 2019).

    Per example, over the mapped `(teacher_tap, student_tap)` pairs:

    `loss_i = sum_pairs || t_i / ||t_i||_2 - s_i / ||s_i||_2 ||_2^2`

    divided by `num_pairs * hidden` when `average=True` (the default). The
    paper prints the sum, but its reference implementation computes
    `F.mse_loss` (the mean over layers and features) and the paper's `beta`
    search (10 ... 1000) was done at that scale: with the plain sum, `beta`
    is effectively `num_pairs * hidden` times larger (768x for MiniLM-L6's
    6 -> 3 pairs) and the patient term overwhelms the soft and hard losses
    (measured: a 3-layer student on movie_snippets collapsed to constant
    logits at `beta=100`). `average=False` gives the printed sum.

    Taps are `cls/<i>` vectors of shape `(batch, hidden)`; a
    `(batch, seq, hidden)` tap (e.g. `hidden/<i>`) is reduced to its first
    ([CLS]) position. Teacher and student widths must match.

    Args:
        pairs: list of `(teacher_tap, student_tap)` pairs, e.g.
            `[("cls/2", "cls/1"), ("cls/4", "cls/2")]` (PKD-Skip, 6 -> 3).
        weight: float. Weight in the total loss (PKD's `beta`).
        average: bool. Mean over pairs and features (the reference code's
            scale, default) instead of the sum.
        epsilon: float. Floor on squared norms when normalising.

    Examples:

    ```python
    term = NormalizedClsMSE([("cls/2", "cls/1"), ("cls/4", "cls/2")],
                            weight=100.0)
    per_example = term(teacher_taps, student_taps, batch)
    ```
    """

    def __init__(self, pairs, weight=1.0, average=True, epsilon=1e-12, name=None,
                 **kwargs):
        super().__init__(pairs, weight=weight, name=name or "patient_cls",
                         **kwargs)
        self.average = bool(average)
        self.epsilon = float(epsilon)

    def call(self, teacher, student, batch):
        total = 0.0
        for t_name, s_name, t, s in self.float_pairs(teacher, student):
            t, s = _cls(t), _cls(s)
            check_widths(t, s, t_name, s_name, self.name)
            diff = l2_normalize(t, self.epsilon) - l2_normalize(s, self.epsilon)
            per_pair = ops.square(diff)
            per_pair = (ops.mean(per_pair, axis=-1) if self.average
                        else ops.sum(per_pair, axis=-1))
            total = total + per_pair
        return total / len(self.pairs) if self.average else total

    def get_config(self):
        config = super().get_config()
        config.update({"average": self.average, "epsilon": self.epsilon})
        return config


def _cls(x):
    return x[:, 0, :] if len(x.shape) == 3 else x
