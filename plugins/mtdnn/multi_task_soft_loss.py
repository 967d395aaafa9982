import keras
from keras import ops

from kdplug_plugins.mtdnn.multi_task_term import MultiTaskTerm


@keras.saving.register_keras_serializable(package="kdplug_mtdnn")
class MultiTaskSoftLoss(MultiTaskTerm):
    """Loss against a teacher ensemble's averaged outputs, per task head.

    Reads two cached teacher taps: `targets`, `(batch, width)`, and
    `present`, `(batch,)` (1 where the example's task has a teacher). For an
    example of a classification task with `C` classes, `targets[:, :C]` are
    the ensemble's averaged class probabilities `p = mean_k softmax(t_k / T)`
    and the loss is `T^2 * sum_c p_c * -log softmax(s / T)_c` (soft
    cross-entropy; `T = 1` in MT-DNN-KD). For a regression task,
    `targets[:, 0]` is the ensemble's average prediction and the loss is
    `(s - targets[:, 0])^2`. Examples whose task has no teacher contribute 0.

    Args:
        tasks: list of `{"name", "type", "num_outputs"}`, in the student's
            head order (the batch's `task` feature indexes it).
        temperature: float > 0. Must be the temperature the targets were
            averaged at (`TeacherEnsemble` uses the method's).
        weight: float. Weight in the total loss (`alpha`).
        name: str. The name shown in logs.

    Examples:

    ```python
    soft = MultiTaskSoftLoss(tasks, temperature=1.0, weight=0.5)
    per_example = soft({"targets": targets, "present": present},
                       student_taps, {"task": task_ids, "labels": labels})
    ```
    """

    teacher_taps = ("targets", "present")

    def __init__(self, tasks, temperature=1.0, weight=1.0, name=None, **kwargs):
        super().__init__(tasks, weight=weight, name=name or "soft", **kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)

    def call(self, teacher, student, batch):
        targets = ops.cast(teacher["targets"], "float32")
        present = ops.cast(teacher["present"], "float32")
        temp = self.temperature

        def loss(index, spec, mine):
            out = ops.cast(student[self.tap_of(spec)], "float32")
            if spec["type"] == "regression":
                return ops.square(out[:, 0] - targets[:, 0])
            probs = targets[:, : spec["num_outputs"]]
            log_q = ops.log_softmax(out / temp, axis=-1)
            return -ops.sum(probs * log_q, axis=-1) * temp * temp

        return self.per_task(batch, loss) * present

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature})
        return config
