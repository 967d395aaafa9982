"""`ResumableBackup`: per-epoch backups that a kill can never leave
half-written, and say when they resume."""

import logging
import os
import shutil

import keras

from kdplug import storage

log = logging.getLogger(__name__)

RECORD = "backup.json"  # {"epoch": epochs finished, "weights": WEIGHTS}
WEIGHTS = "epoch-{:04d}.weights.h5"
# The layout of Keras' `BackupAndRestore(double_checkpoint=True)`, which
# kdplug used before: still read, so a run interrupted then resumes.
LEGACY = (("latest.weights.h5", "training_metadata.json"),
          ("latest.weights.h5.bkp", "training_metadata.json.bkp"))


class ResumableBackup(keras.callbacks.Callback):
    """Backs up training after every epoch; a new `fit` resumes from it.

    At the end of every epoch the model's weights (for a `Distiller`: the
    student, the frozen teacher, the loss terms' projections and the
    optimizer's state, step counter included) go to a new file,
    `epoch-<n>.weights.h5`, written under a temporary name and renamed;
    then `backup.json` (also replaced atomically) names it and the number
    of finished epochs, and the file of the epoch before is removed. So the
    record always names a complete file of the same epoch: a kill at any
    moment resumes from the newest backup that was finished, never from
    weights of one epoch with the epoch counter of another (Keras'
    `BackupAndRestore` writes its weights and its epoch counter one after
    the other in place, and keeps a copy of the previous backup, another
    full write every epoch).

    When `fit` starts and a backup exists (the previous run was killed),
    training resumes at the first unfinished epoch with that state, so the
    resumed run ends with the same number of optimizer steps (and the same
    learning-rate schedule) as an uninterrupted one; the interrupted epoch
    is trained again from its first batch. A backup that cannot be loaded
    (a damaged disk) is reported and training starts over. The backup is
    removed when `fit` ends, or, with `remove_at_end=False`, when the caller
    has stored what `fit` trained (`remove()`), so that a kill in between
    resumes at the last epoch instead of training again from the first.
    `History` then holds the resumed epochs only.
    A backup in Keras' `BackupAndRestore` layout (`latest.weights.h5`,
    written by kdplug before this one) is resumed from too.

    The epoch after which `fit` ends (its last, or one after which a callback
    earlier in the list set `stop_training`, e.g. `KeepBestEpoch`) writes no
    backup: it would be removed a moment later (for MiniLM-L6 with AdamW a
    backup is 273 MB). A kill in that moment resumes at that epoch from the
    backup before it.

    Args:
        backup_dir: a folder used only by this callback.
        stage: the stage name, for the messages.
        remove_at_end: remove the backup when `fit` ends; False leaves that
            to `remove()`.

    Examples:

    ```python
    model.fit(ds, epochs=5, callbacks=[ResumableBackup("runs/x/backup/01-distill",
                                                       "distill")])
    ```
    """

    def __init__(self, backup_dir, stage="train", remove_at_end=True):
        super().__init__()
        self.backup_dir = backup_dir
        self.stage = stage
        self.remove_at_end = remove_at_end
        self.resumed_epoch = None  # the epoch fit resumed at, or None

    def backed_up_epochs(self):
        """Epochs finished in the backup on disk (0 when there is none)."""
        found = next(self._backups(), None)
        return found[0] if found else 0

    # -------------------------------------------------------- callbacks
    def on_train_begin(self, logs=None):
        if not os.path.isdir(self.backup_dir):
            return
        storage.remove_stale_temporaries(self.backup_dir)
        backups = list(self._backups())
        if backups:
            optimizer = getattr(self.model, "optimizer", None)
            if optimizer is not None and not optimizer.built:  # its state is in the file
                optimizer.build(self.model.trainable_variables)
            variables = self.model.weights + (optimizer.variables if optimizer else [])
            fresh = [(v, v.numpy()) for v in variables]  # undoes a half-way load
        for epoch, path in backups:
            try:
                self.model.load_weights(path)
            except Exception as error:  # noqa: BLE001 - any unreadable file
                log.warning("stage %s: the backup %s cannot be loaded (%s: %s)",
                            self.stage, path, type(error).__name__, error)
                for variable, value in fresh:
                    variable.assign(value)
                continue
            self.model._initial_epoch = epoch  # read by `fit` after this call
            if epoch:
                self.resumed_epoch = epoch
                log.info(f"stage {self.stage}: resumed from {self.backup_dir} at "
                         f"epoch {epoch + 1} ({epoch} finished)")
            return
        log.warning("stage %s: no backup in %s can be loaded; training starts over",
                    self.stage, self.backup_dir)

    def on_epoch_end(self, epoch, logs=None):
        epochs = (self.params or {}).get("epochs")
        if self.model.stop_training or (epochs is not None and epoch + 1 >= epochs):
            return  # fit ends now: the backup goes once its result is stored
        self._save(epoch + 1)

    def on_train_end(self, logs=None):
        if self.remove_at_end:
            self.remove()

    def remove(self):
        """Removes the backup (once what `fit` trained is stored)."""
        shutil.rmtree(self.backup_dir, ignore_errors=True)

    # ------------------------------------------------------------- disk
    def _save(self, epochs_finished):
        os.makedirs(self.backup_dir, exist_ok=True)
        name = WEIGHTS.format(epochs_finished)
        storage.save_weights(self.model, os.path.join(self.backup_dir, name))
        storage.write_json(os.path.join(self.backup_dir, RECORD),
                           {"epoch": epochs_finished, "weights": name})
        for other in os.listdir(self.backup_dir):  # earlier epochs' files
            path = os.path.join(self.backup_dir, other)
            if other not in (RECORD, name) and os.path.isfile(path):
                os.remove(path)

    def _backups(self):
        """`(epochs finished, weights file)` of each backup on disk, the
        newest first: the record's, then Keras' layout's two."""
        record = storage.read_json(os.path.join(self.backup_dir, RECORD))
        if record:
            yield int(record["epoch"]), os.path.join(self.backup_dir, record["weights"])
            return
        for weights, metadata in LEGACY:
            found = storage.read_json(os.path.join(self.backup_dir, metadata))
            path = os.path.join(self.backup_dir, weights)
            if found and os.path.isfile(path):
                yield int(found["epoch"]), path
