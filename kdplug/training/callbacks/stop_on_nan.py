"""`StopOnNaN`: a non-finite loss stops the run with a clear error."""

import math
import os

import keras

from kdplug.errors import TrainingError


class StopOnNaN(keras.callbacks.Callback):
    """Stops training with a clear error when the loss becomes NaN or Inf.

    Unlike `keras.callbacks.TerminateOnNaN` it raises `TrainingError`, so a
    run cannot end "successfully" with a broken model; the last checkpoint
    written by `ResumableBackup` (end of the last good epoch) is kept.

    Args:
        stage: the stage name, for the message.
        checkpoint_dir: where the last good checkpoint lives, named in the
            message only when something is there (a loss that breaks in
            the first epoch has no checkpoint to keep).
        learning_rate_field: the config field whose learning rate trains
            this model (`training.learning_rate`; the teacher's fine-tuning
            passes `teacher.finetune.learning_rate`), named in the message.

    Examples:

    ```python
    model.fit(ds, callbacks=[StopOnNaN("distill", "runs/x/backup")])
    ```
    """

    def __init__(self, stage="train", checkpoint_dir=None,
                 learning_rate_field="training.learning_rate"):
        super().__init__()
        self.stage = stage
        self.checkpoint_dir = checkpoint_dir
        self.learning_rate_field = learning_rate_field
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        loss = float(loss)
        if math.isfinite(loss):
            return
        self.model.stop_training = True
        where = (
            f"; the last good checkpoint is kept in {self.checkpoint_dir}"
            if self.checkpoint_dir and os.path.isdir(self.checkpoint_dir)
            and os.listdir(self.checkpoint_dir) else ""
        )
        raise TrainingError(
            f"stage {self.stage!r}: loss became {loss} at epoch "
            f"{self._epoch + 1}, batch {batch + 1}{where}. Lower "
            f"{self.learning_rate_field} or check the data."
        )
