import keras
from keras import ops

from kdplug.training.fused_adam_w import FusedAdamW


@keras.saving.register_keras_serializable(package="kdplug")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up to `peak`, then linear decay to zero (BERT's schedule).

    Args:
        peak: float. The learning rate after warm-up.
        total_steps: int. Steps at which the rate reaches zero.
        warmup_steps: int. Steps of linear warm-up.

    Examples:

    ```python
    schedule = WarmupLinearDecay(5e-5, total_steps=1000, warmup_steps=100)
    optimizer = keras.optimizers.AdamW(schedule)
    ```
    """

    def __init__(self, peak, total_steps, warmup_steps=0):
        self.peak = float(peak)
        self.total_steps = max(int(total_steps), 1)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warm = ops.cast(max(self.warmup_steps, 1), "float32")
        total = ops.cast(self.total_steps, "float32")
        up = self.peak * step / warm
        down = self.peak * ops.maximum(total - step, 0.0) / ops.maximum(
            total - warm, 1.0
        )
        return ops.where(step < self.warmup_steps, up, down)

    def get_config(self):
        return {
            "peak": self.peak,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
        }


def make_optimizer(kind, learning_rate, total_steps, warmup_ratio=0.0,
                   weight_decay=0.0):
    """The optimizer recipe `kdplug run` trains with (BERT's): a linear
    warm-up over `warmup_ratio` of the steps to `learning_rate`, then a
    linear decay to zero at `total_steps` (`WarmupLinearDecay`), gradients
    clipped to a global norm of 1.0, epsilon 1e-6; `adamw` leaves biases and
    layer-norm scales out of the weight decay. `adamw` and `adam` are
    `FusedAdamW` (Keras' AdamW, each variable updated by TensorFlow's fused
    kernel; `adam` without decay).

    Args:
        kind: `adamw`, `adam` or `sgd` (momentum 0.9).
        learning_rate: float. The peak learning rate.
        total_steps: int. Optimizer steps of the whole training.
        warmup_ratio: float in [0, 1).
        weight_decay: float (`adamw` only).

    Examples:

    ```python
    optimizer = kdplug.make_optimizer("adamw", 5e-5, total_steps=3 * len(batches),
                                      warmup_ratio=0.1, weight_decay=0.01)
    distiller.compile(optimizer=optimizer)
    ```
    """
    schedule = WarmupLinearDecay(
        learning_rate, total_steps, int(round(warmup_ratio * total_steps))
    )
    if kind == "adamw":
        optimizer = FusedAdamW(
            schedule, weight_decay=weight_decay, epsilon=1e-6, global_clipnorm=1.0,
            name="adamw",
        )
        optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
        return optimizer
    if kind == "adam":
        return FusedAdamW(schedule, weight_decay=0.0, epsilon=1e-6,
                          global_clipnorm=1.0, name="adam")
    return keras.optimizers.SGD(schedule, momentum=0.9, global_clipnorm=1.0)
