import keras
from keras import ops

from kdplug.terms.paired_term import PairedTerm


@keras.saving.register_keras_serializable(package="kdplug")
class FeatureMapTransfer(PairedTerm):
    """MobileBERT's feature-map transfer (Sun et al. 2020): per-token MSE.

    For every `(teacher_tap, student_tap)` pair of hidden-state taps
    `(batch, seq, hidden)` the loss of example `i` is the squared error
    averaged over the hidden units and over the example's valid tokens
    (`batch["padding_mask"] == 1`), summed over the pairs:

    `loss_i = sum_pairs sum_t m_it mean_n (T_itn - S_itn)^2 / sum_t m_it`

    With `layer_norm=True` both feature maps are first layer-normalised
    over the hidden units, without learned scale or shift, as the
    reference code does (TF Model Garden's MobileBERT distillation:
    `mean_squared_error(LN(T), LN(S))` with a non-trainable
    `LayerNormalization`):

    `LN(x)_n = (x_n - mean(x)) / sqrt(var(x) + epsilon)`

    so the loss compares the shapes of the token vectors, not their scale.
    Padding tokens never contribute; an example without a valid token
    contributes zero. Teacher and student widths must match (the
    `bottleneck` student's inter-block width is the teacher's).

    Args:
        pairs: list of `(teacher_tap, student_tap)`, e.g.
            `[("hidden/3", "hidden/3")]`.
        weight: float. Weight in the total loss.
        layer_norm: bool. Layer-normalise both maps first. False by default
            so that terms saved before the option existed load unchanged;
            the `mobilebert-pkt` method turns it on by default.
        epsilon: float. The layer norm's variance epsilon (Keras'
            `LayerNormalization` default, which the reference uses).
        name: str. Defaults to `"feature_map_mse"`.

    Examples:

    ```python
    term = FeatureMapTransfer([("hidden/2", "hidden/2")], weight=1.0)
    per_example = term({"hidden/2": t}, {"hidden/2": s},
                       {"padding_mask": mask})
    normalised = FeatureMapTransfer([("hidden/2", "hidden/2")], layer_norm=True)
    ```
    """

    def __init__(self, pairs, weight=1.0, layer_norm=False, epsilon=1e-3,
                 name=None, **kwargs):
        super().__init__(pairs, weight=weight, name=name or "feature_map_mse",
                         **kwargs)
        self.layer_norm = bool(layer_norm)
        self.epsilon = float(epsilon)

    def normalize(self, x):
        """`x` layer-normalised over its last axis (no scale, no shift)."""
        mean = ops.mean(x, axis=-1, keepdims=True)
        var = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) / ops.sqrt(var + self.epsilon)

    def per_token(self, t, s):
        if self.layer_norm:
            t, s = self.normalize(t), self.normalize(s)
        return ops.mean(ops.square(t - s), axis=-1)

    def call(self, teacher, student, batch):
        return self.token_mean_over_pairs(teacher, student, batch, self.per_token)

    def get_config(self):
        config = super().get_config()
        config.update({"layer_norm": self.layer_norm, "epsilon": self.epsilon})
        return config
