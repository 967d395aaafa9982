"""Keras callbacks used by kdplug runs."""

import math
import os

import keras

from kdplug.errors import TrainingError


class StopOnNaN(keras.callbacks.Callback):
    """Stops training with a clear error when the loss becomes NaN or Inf.

    Unlike `keras.callbacks.TerminateOnNaN` it raises `TrainingError`, so a
    run cannot end "successfully" with a broken model; the last checkpoint
    written by `BackupAndRestore` (end of the last good epoch) is kept.

    Args:
        stage: the stage name, for the message.
        checkpoint_dir: where the last good checkpoint lives, for the message.

    Examples:

    ```python
    model.fit(ds, callbacks=[StopOnNaN("distill", "runs/x/backup")])
    ```
    """

    def __init__(self, stage="train", checkpoint_dir=None):
        super().__init__()
        self.stage = stage
        self.checkpoint_dir = checkpoint_dir
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
            if self.checkpoint_dir else ""
        )
        raise TrainingError(
            f"stage {self.stage!r}: loss became {loss} at epoch "
            f"{self._epoch + 1}, batch {batch + 1}{where}. Lower "
            "training.learning_rate or check the data."
        )


class ResumableBackup(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` that says when it resumes.

    At the end of every epoch the model's weights (for a `Distiller`: the
    student, the frozen teacher, the loss terms' projections and the
    optimizer's state, step counter included) and the epoch number are
    written to `backup_dir`. When `fit` starts and a backup exists (the
    previous run was killed), training resumes at the first unfinished epoch
    with that state, so the resumed run ends with the same number of optimizer
    steps (and the same learning-rate schedule) as an uninterrupted one; the
    interrupted epoch is trained again from its first batch. The backup is
    removed when `fit` ends. `History` then holds the resumed epochs only.
    The previous backup is kept next to the latest (`double_checkpoint`), so
    a kill while a backup is being written resumes from the one before.

    Args:
        backup_dir: a folder used only by this callback.
        stage: the stage name, for the message.
        log: a `print`-like function; gets `"stage <name>: resumed from
            <backup_dir> at epoch <k + 1> (<k> finished)"`.

    Examples:

    ```python
    model.fit(ds, epochs=5, callbacks=[ResumableBackup("runs/x/backup/01-distill",
                                                       "distill")])
    ```
    """

    def __init__(self, backup_dir, stage="train", log=print):
        # two backups: a kill while one is written leaves the previous one
        super().__init__(backup_dir, double_checkpoint=True)
        self.stage = stage
        self.log = log
        self.resumed_epoch = None  # the epoch fit resumed at, or None

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        epoch = getattr(self.model, "_initial_epoch", None)
        if os.path.exists(self._training_metadata_path) and epoch:
            self.resumed_epoch = int(epoch)
            self.log(f"stage {self.stage}: resumed from {self.backup_dir} at "
                     f"epoch {epoch + 1} ({epoch} finished)")
