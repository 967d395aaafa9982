"""`ResumableBackup`: per-epoch backups that say when they resume."""

import logging
import os

import keras

log = logging.getLogger(__name__)


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

    The epoch after which `fit` ends (its last, or one after which a callback
    earlier in the list set `stop_training`, e.g. `KeepBestEpoch`) writes no
    backup: `fit` removes it a moment later, and writing it cost a copy of
    the previous backup plus the weights and optimizer state (for
    MiniLM-L6 with AdamW, 273 MB each). A kill in that moment resumes at
    that epoch from the backup before it.

    Args:
        backup_dir: a folder used only by this callback.
        stage: the stage name, for the message.

    Examples:

    ```python
    model.fit(ds, epochs=5, callbacks=[ResumableBackup("runs/x/backup/01-distill",
                                                       "distill")])
    ```
    """

    def __init__(self, backup_dir, stage="train"):
        # two backups: a kill while one is written leaves the previous one
        super().__init__(backup_dir, double_checkpoint=True)
        self.stage = stage
        self.resumed_epoch = None  # the epoch fit resumed at, or None

    def on_epoch_end(self, epoch, logs=None):
        epochs = (self.params or {}).get("epochs")
        if self.model.stop_training or (epochs is not None and epoch + 1 >= epochs):
            self._current_epoch = epoch + 1  # fit ends now and deletes the backup
            return
        super().on_epoch_end(epoch, logs)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        epoch = getattr(self.model, "_initial_epoch", None)
        if os.path.exists(self._training_metadata_path) and epoch:
            self.resumed_epoch = int(epoch)
            log.info(f"stage {self.stage}: resumed from {self.backup_dir} at "
                     f"epoch {epoch + 1} ({epoch} finished)")
