import keras
from keras import ops

from kdplug.terms.paired_term import PairedTerm

STATISTICS = ("mean", "variance")


@keras.saving.register_keras_serializable(package="kdplug")
class FeatureStatisticsTransfer(PairedTerm):
    """MobileBERT's distribution terms (the reference code's `beta` and
    `gamma` losses, TF Model Garden's MobileBERT distillation): each token
    vector's mean, or its variance, over the hidden units, matched between
    teacher and student.

    For every `(teacher_tap, student_tap)` pair of hidden-state taps
    `(batch, seq, hidden)`, with `mu` and `sigma^2` taken over the hidden
    units of one token, the loss of example `i` averages over its valid
    tokens (`batch["padding_mask"] == 1`) and sums over the pairs:

    - `statistic="mean"`: `sum_t m_it (mu(S_it) - mu(T_it))^2 / sum_t m_it`
      (the reference's `beta` loss, weighted 5000 there);
    - `statistic="variance"`: `sum_t m_it |sigma^2(S_it) - sigma^2(T_it)| /
      sum_t m_it` (its `gamma` loss, an absolute difference, weighted 5).

    `FeatureMapTransfer` with `layer_norm=True` compares the token vectors
    after removing exactly these two statistics; these terms transfer them.
    The reference averages over every position, padding included; here an
    example's padding never contributes (one without a valid token gives
    zero).

    Args:
        pairs: list of `(teacher_tap, student_tap)`, e.g.
            `[("hidden/3", "hidden/3")]`.
        statistic: `mean` or `variance`.
        weight: float. Weight in the total loss.
        name: str. Defaults to `"feature_mean"` / `"feature_variance"`.

    Examples:

    ```python
    beta = FeatureStatisticsTransfer([("hidden/2", "hidden/2")], "mean", weight=5000.0)
    gamma = FeatureStatisticsTransfer([("hidden/2", "hidden/2")], "variance", weight=5.0)
    per_example = beta({"hidden/2": t}, {"hidden/2": s}, {"padding_mask": mask})
    ```
    """

    def __init__(self, pairs, statistic="mean", weight=1.0, name=None, **kwargs):
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
        super().__init__(pairs, weight=weight, name=name or f"feature_{statistic}",
                         **kwargs)
        self.statistic = statistic

    def per_token(self, t, s):
        """`(batch, seq)` differences of the two maps' per-token statistic."""
        if self.statistic == "mean":
            return ops.square(ops.mean(s, axis=-1) - ops.mean(t, axis=-1))
        return ops.abs(ops.var(s, axis=-1) - ops.var(t, axis=-1))

    def call(self, teacher, student, batch):
        return self.token_mean_over_pairs(teacher, student, batch, self.per_token)

    def get_config(self):
        config = super().get_config()
        config.update({"statistic": self.statistic})
        return config
