import keras
from keras import ops


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
    """An optimizer with BERT's warm-up / linear-decay schedule."""
    schedule = WarmupLinearDecay(
        learning_rate, total_steps, int(round(warmup_ratio * total_steps))
    )
    if kind == "adamw":
        optimizer = keras.optimizers.AdamW(
            schedule, weight_decay=weight_decay, epsilon=1e-6, global_clipnorm=1.0
        )
        optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
        return optimizer
    if kind == "adam":
        return keras.optimizers.Adam(schedule, epsilon=1e-6, global_clipnorm=1.0)
    return keras.optimizers.SGD(schedule, momentum=0.9, global_clipnorm=1.0)
