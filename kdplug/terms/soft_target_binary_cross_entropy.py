import keras
from keras import ops

from kdplug.terms.logit_term import LogitTerm


@keras.saving.register_keras_serializable(package="kdplug")
class SoftTargetBinaryCrossEntropy(LogitTerm):
    """Soft targets for multi-label heads: each label's sigmoid is a
    two-class distribution, softened with a temperature as in Hinton et
    al. (2015), and the student matches the teacher's per label.

    Per example, over `L` labels (`sigma` the sigmoid, `p = sigma(t / T)`,
    `q = sigma(s / T)`):

    ```
    loss = T^2 * 1/L * sum_l -[p_l log q_l + (1 - p_l) log(1 - q_l)]
    ```

    `T^2` keeps the gradients' scale across temperatures (as in
    `SoftTargetCrossEntropy`); the mean over labels matches
    `HardLabelBinaryCrossEntropy`, so `alpha` weighs two terms of one scale.
    The temperature is a non-trainable variable so that it can be scheduled.

    Args:
        temperature: float. Temperature `T` (> 0).
        weight: float. Weight in the total loss.
        tap: str. The logits tap to compare, `(batch, L)`.

    Examples:

    ```python
    term = SoftTargetBinaryCrossEntropy(temperature=2.0, weight=0.5)
    per_example = term({"logits": t}, {"logits": s}, batch)
    ```
    """

    def __init__(self, temperature=1.0, weight=1.0, tap="logits", name=None, **kwargs):
        super().__init__(tap=tap, weight=weight, name=name or "soft_bce", **kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.initial_temperature = float(temperature)
        self.temperature = self.add_weight(
            shape=(), trainable=False, name="temperature",
            initializer=keras.initializers.Constant(self.initial_temperature))

    def call(self, teacher, student, batch):
        t, s = self.logits(teacher, student)
        temp = ops.cast(self.temperature, "float32")
        p = ops.sigmoid(t / temp)
        bce = keras.losses.binary_crossentropy(p, s / temp, from_logits=True)
        return bce * temp * temp

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.initial_temperature})
        return config
