import keras
from keras import ops

from kdplug_plugins.mtdnn.multi_task_term import MultiTaskTerm


@keras.saving.register_keras_serializable(package="kdplug_mtdnn")
class MultiTaskHardLoss(MultiTaskTerm):
    """Gold-label loss of each example's own task head.

    Per example of task `i`: cross-entropy `-log softmax(s_i)_y` for a
    classification task (0 for an example without a gold label, `y < 0`),
    squared error `(s_i - y)^2` for a regression task (the label is the
    target value). Where a teacher target exists (`teacher["present"]` is 1)
    the loss is scaled by `1 - alpha`, so that together with
    `MultiTaskSoftLoss` (weight `alpha`) each task's loss is
    `(1 - alpha) * hard + alpha * soft` when it has a teacher and `hard`
    alone when it has none (MT-DNN-KD: `alpha = 0.5`, the mean of the two).

    Args:
        tasks: list of `{"name", "type", "num_outputs"}`, in the student's
            head order (the batch's `task` feature indexes it).
        alpha: float in [0, 1]. The soft loss's share where a teacher target
            exists; 0 makes this a plain hard-label loss that reads no
            teacher output.
        weight: float. Weight in the total loss.
        name: str. The name shown in logs.

    Examples:

    ```python
    tasks = [{"name": "sst", "type": "classification", "num_outputs": 2},
             {"name": "stsb", "type": "regression", "num_outputs": 1}]
    hard = MultiTaskHardLoss(tasks, alpha=0.5)
    per_example = hard({"present": present}, student_taps,
                       {"task": task_ids, "labels": labels})
    ```
    """

    def __init__(self, tasks, alpha=0.0, weight=1.0, name=None, **kwargs):
        super().__init__(tasks, weight=weight, name=name or "hard", **kwargs)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.alpha = float(alpha)

    def required_teacher_taps(self):
        return {"present"} if self.alpha > 0 else set()

    def call(self, teacher, student, batch):
        labels = ops.cast(batch["labels"], "float32")

        def loss(index, spec, mine):
            out = ops.cast(student[self.tap_of(spec)], "float32")
            if spec["type"] == "regression":
                return ops.square(out[:, 0] - labels)
            gold = ops.cast(ops.greater_equal(labels, 0.0), "float32")
            # Other tasks' labels (scores, other class ranges) become a valid
            # class id here; per_task() discards those rows.
            ids = ops.where(mine, labels, ops.zeros_like(labels))
            ids = ops.clip(ops.cast(ids, "int32"), 0, spec["num_outputs"] - 1)
            ce = keras.losses.sparse_categorical_crossentropy(
                ids, out, from_logits=True
            )
            return ce * gold

        hard = self.per_task(batch, loss)
        if self.alpha > 0:
            present = ops.cast(teacher["present"], "float32")
            hard = hard * (1.0 - self.alpha * present)
        return hard

    def get_config(self):
        config = super().get_config()
        config.update({"alpha": self.alpha})
        return config
