import keras
from keras import ops

from kdplug.terms.paired_term import PairedTerm
from kdplug.terms.pairs import check_widths
from kdplug.terms.pairs import masked_token_mean
from kdplug.terms.pairs import padding_mask


@keras.saving.register_keras_serializable(package="kdplug")
class FeatureMapTransfer(PairedTerm):
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
        super().__init__(pairs, weight=weight, name=name or "feature_map_mse",
                         **kwargs)

    def call(self, teacher, student, batch):
        mask = padding_mask(batch, self.name)
        valid = ops.sum(mask, axis=-1)
        total = 0.0
        for t_name, s_name, t, s in self.float_pairs(teacher, student):
            check_widths(t, s, t_name, s_name, self.name)
            per_token = ops.mean(ops.square(t - s), axis=-1)
            total = total + masked_token_mean(per_token, mask, valid)
        return total
