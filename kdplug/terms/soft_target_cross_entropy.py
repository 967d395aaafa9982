import keras
from keras import ops

from kdplug.terms.logit_term import LogitTerm


@keras.saving.register_keras_serializable(package="kdplug")
class SoftTargetCrossEntropy(LogitTerm):
    """Hinton et al. (2015) soft-target cross-entropy with temperature.

    Per example: `T^2 * sum_c softmax(t/T)_c * -log softmax(s/T)_c`. The `T^2`
    factor keeps gradient magnitudes comparable across temperatures. The
    temperature is a non-trainable variable so that it can be scheduled.

    Args:
        temperature: float. Softmax temperature `T` (> 0).
        weight: float. Weight in the total loss.
        tap: str. The logits tap to compare (`"logits"` by default).

    Examples:

    ```python
    term = SoftTargetCrossEntropy(temperature=2.0, weight=0.5)
    per_example = term({"logits": t}, {"logits": s}, batch)
    ```
    """

    def __init__(self, temperature=1.0, weight=1.0, tap="logits", name=None,
                 **kwargs):
        super().__init__(tap=tap, weight=weight, name=name or "soft_ce", **kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.initial_temperature = float(temperature)
        self.temperature = self.add_weight(
            shape=(),
            initializer=keras.initializers.Constant(self.initial_temperature),
            trainable=False,
            name="temperature",
        )

    def call(self, teacher, student, batch):
        t, s = self.logits(teacher, student)
        temp = ops.cast(self.temperature, "float32")
        p_teacher = ops.softmax(t / temp, axis=-1)
        log_p_student = ops.log_softmax(s / temp, axis=-1)
        return -ops.sum(p_teacher * log_p_student, axis=-1) * temp * temp

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.initial_temperature})
        return config
