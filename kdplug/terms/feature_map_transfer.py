import keras
from keras import ops

from kdplug.errors import KdplugError
from kdplug.terms.pairs import check_pairs
from kdplug.terms.pairs import check_widths
from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class FeatureMapTransfer(Term):
    """MobileBERT's feature-map transfer (Sun et al. 2020): per-token MSE.

    For every `(teacher_tap, student_tap)` pair of hidden-state taps
    `(batch, seq, hidden)` the loss of example `i` is the squared error
    averaged over the hidden units and over the example's valid tokens
    (`batch["padding_mask"] == 1`), summed over the pairs:

    `loss_i = sum_pairs sum_t m_it mean_n (T_itn - S_itn)^2 / sum_t m_it`

    Padding tokens never contribute; an example without a valid token
    contributes zero. Teacher and student widths must match (the
    `bottleneck` student's inter-block width is the teacher's).

    Args:
        pairs: list of `(teacher_tap, student_tap)`, e.g.
            `[("hidden/3", "hidden/3")]`.
        weight: float. Weight in the total loss.
        name: str. Defaults to `"feature_map_mse"`.

    Examples:

    ```python
    term = FeatureMapTransfer([("hidden/2", "hidden/2")], weight=1.0)
    per_example = term({"hidden/2": t}, {"hidden/2": s},
                       {"padding_mask": mask})
    ```
    """

    def __init__(self, pairs, weight=1.0, name=None, **kwargs):
        super().__init__(weight=weight, name=name or "feature_map_mse", **kwargs)
        self.pairs = check_pairs(pairs, type(self).__name__)

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
            per_token = ops.mean(ops.square(t - s), axis=-1)
            total = total + ops.divide_no_nan(
                ops.sum(per_token * mask, axis=-1), valid
            )
        return total

    def get_config(self):
        config = super().get_config()
        config.update({"pairs": [list(p) for p in self.pairs]})
        return config
