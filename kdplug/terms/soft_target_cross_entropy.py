import keras
from keras import ops

from kdplug.terms.logit_term import LogitTerm


@keras.saving.register_keras_serializable(package="kdplug")
class SoftTargetCrossEntropy(LogitTerm):
    """Hinton et al. (2015) soft-target cross-entropy with temperature.

    Per example: `T^2 * sum_c softmax(t/T)_c * -log softmax(s/T)_c`. The `T^2`
    factor keeps gradient magnitudes comparable across temperatures. The
    temperature is a non-trainable variable so that it can be scheduled.

    With `class_mean=True` the sum over the `C` classes becomes a mean
    (divided by `C`): `T^2 / C * sum_c ...`. That is the scale of PKD's
    reference code (Sun et al. 2019, `nn.KLDivLoss(reduction='mean')(...) *
    T * T`, whose `mean` runs over batch x classes); the per-example value
    there is the KL divergence `T^2 / C * sum_c p_c (log p_c - log q_c)`.
    This term returns the cross-entropy: it differs from that KL by the
    teacher's entropy `T^2 / C * H(p)`, which does not depend on the
    student, so the gradients are the same and the logged value sits
    `T^2 / C * H(p)` above the reference's (its floor, reached when the
    student matches the teacher).

    Args:
        temperature: float. Softmax temperature `T` (> 0).
        weight: float. Weight in the total loss.
        tap: str. The logits tap to compare (`"logits"` by default).
        class_mean: bool. Divide by the number of classes `C` (PKD's
            reference scale); False (the default) sums over classes, as
            Hinton et al. and every other built-in method.

    Examples:

    ```python
    term = SoftTargetCrossEntropy(temperature=2.0, weight=0.5)
    per_example = term({"logits": t}, {"logits": s}, batch)
    # PKD's reference scale: T^2 * CE / C
    pkd_soft = SoftTargetCrossEntropy(temperature=5.0, weight=0.5, class_mean=True)
    ```
    """

    def __init__(self, temperature=1.0, weight=1.0, tap="logits", name=None,
                 class_mean=False, **kwargs):
        super().__init__(tap=tap, weight=weight, name=name or "soft_ce", **kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.initial_temperature = float(temperature)
        self.class_mean = bool(class_mean)
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
        loss = -ops.sum(p_teacher * log_p_student, axis=-1) * temp * temp
        if self.class_mean:
            loss = loss / ops.cast(ops.shape(t)[-1], loss.dtype)
        return loss

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.initial_temperature,
                       "class_mean": self.class_mean})
        return config
