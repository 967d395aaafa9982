"""`KeepBestEpoch`: early stopping that keeps, restores and reports the best
epoch, and survives an interrupted run."""

import logging
import math
import os
import shutil
import warnings

import keras

from kdplug import storage
from kdplug.errors import ConfigError
from kdplug.errors import did_you_mean

log = logging.getLogger(__name__)

STATE = "state.json"
WEIGHTS = "best-{:04d}.weights.h5"  # the weights at the end of that (1-based) epoch
LEGACY_WEIGHTS = "best.weights.h5"  # earlier kdplug: one file, the best epoch's


class KeepBestEpoch(keras.callbacks.Callback):
    """Keeps the weights of the epoch with the best validation value, stops
    training after `patience` epochs without improvement and restores the
    best weights when training ends.

    Unlike `keras.callbacks.EarlyStopping(restore_best_weights=True)`, the
    best weights and every epoch's value live on disk (`folder/`), so a run
    killed and resumed (`ResumableBackup`) still restores the best epoch of
    the whole stage, not of the resumed part; the weights kept are those of
    `model` (for a `Distiller`: the student alone, not the frozen teacher);
    and `summary()` says which epoch won, for the report. An improvement is
    a value better than the best so far by more than `min_delta`; a NaN is
    never one. The best weights are restored even when training ran every
    epoch (the last epoch is not always the best).

    A new best epoch's weights go to a file of their own, and the file of
    the best epoch before it is kept too: a run killed after this callback
    wrote an epoch but before that epoch's backup (`ResumableBackup`, later
    in the callbacks) trains the epoch again, and when the new pass of that
    epoch does not win (the resumed data order differs), the best epoch
    before it still has its weights.

    Args:
        folder: a folder used only by this callback (removed by `cleanup()`).
        monitor: a key of the epoch logs, e.g. `"val_accuracy"`.
        maximize: bool. Whether larger values are better.
        patience: int or None. Epochs without improvement before training
            stops; None never stops early.
        min_delta: float >= 0.
        model: the model whose weights are kept and restored (default: the
            model being trained).
        stage: the stage name, for messages.
        field: the config field, for errors (`training.early_stopping.monitor`).
        file: the config file, for errors.

    Examples:

    ```python
    best = KeepBestEpoch("runs/x/backup/02-distill.best", "val_accuracy",
                         maximize=True, patience=2, model=student)
    distiller.fit(train_ds, validation_data=val_ds, epochs=10, callbacks=[best])
    best.summary()  # {"best_epoch": 4, "best_value": 0.87, "stopped_early": True, ...}
    ```
    """

    def __init__(self, folder, monitor="val_accuracy", maximize=True, patience=2,
                 min_delta=0.0, model=None, stage="train",
                 field="training.early_stopping.monitor", file=None):
        super().__init__()
        self.folder = folder
        self.monitor = monitor
        self.maximize = bool(maximize)
        self.patience = patience
        self.min_delta = float(min_delta)
        self.kept = model
        self.stage = stage
        self.field = field
        self.file = file
        self.values = {}  # epoch (0-based) -> value
        self.files = {}  # epoch (0-based) -> its weights file in `folder`
        self.last_epoch = None
        self.stopped_early = False

    # ------------------------------------------------------------ state
    @property
    def best_epoch(self):
        """The 0-based epoch with the best value so far (None before any)."""
        best = None
        for epoch in sorted(self.values):
            value = self.values[epoch]
            if math.isnan(value):
                continue
            if best is None or self._better(value, self.values[best]):
                best = epoch
        return best

    def _better(self, value, than):
        if self.maximize:
            return value > than + self.min_delta
        return value < than - self.min_delta

    def _target(self):
        return self.kept if self.kept is not None else self.model

    # -------------------------------------------------------- callbacks
    def on_train_begin(self, logs=None):
        state = storage.read_json(os.path.join(self.folder, STATE)) or {}
        self.values, self.files = {}, {}
        if state.get("monitor") == self.monitor:
            self.values = {int(k): float(v) for k, v in state["values"].items()}
            kept = state.get("kept")
            if kept is None:  # written by an earlier kdplug
                best = self.best_epoch
                kept = {} if best is None else {best: LEGACY_WEIGHTS}
            self.files = {int(k): name for k, name in kept.items()
                          if os.path.isfile(os.path.join(self.folder, name))}
            if not self.files:
                self.values = {}
        if self.values:
            log.info("stage %s: early stopping resumes with %d recorded epoch(s)",
                     self.stage, len(self.values))
        self.stopped_early = False

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.monitor not in logs:
            raise ConfigError(
                f"stage {self.stage!r} does not log {self.monitor!r} on the "
                f"validation split; it logs: "
                f"{', '.join(sorted(k for k in logs if k.startswith('val_'))) or 'none'}",
                self.file, self.field, self.monitor)
        value = float(logs[self.monitor])
        # a resumed run trains `epoch` again: what was recorded from it on is gone
        self.values = {e: v for e, v in self.values.items() if e < epoch}
        self.files = {e: name for e, name in self.files.items() if e < epoch}
        self.values[epoch] = value
        self.last_epoch = epoch
        best = self.best_epoch
        if best == epoch:  # weights first: the state names only files on disk
            name = WEIGHTS.format(epoch + 1)
            storage.save_weights(self._target(), os.path.join(self.folder, name),
                                 include_optimizer=False)
            # this one and the best epoch before it (the latest kept so far)
            self.files = {e: self.files[e] for e in sorted(self.files)[-1:]}
            self.files[epoch] = name
        storage.write_json(os.path.join(self.folder, STATE), {
            "monitor": self.monitor, "values": self.values, "kept": self.files})
        for name in set(os.listdir(self.folder)) - {STATE, *self.files.values()}:
            if name.endswith(".weights.h5"):
                os.remove(os.path.join(self.folder, name))
        waited = epoch - (best if best is not None else -1)
        planned = (self.params or {}).get("epochs")
        last = planned is not None and epoch + 1 >= planned
        if self.patience is not None and waited >= self.patience and not last:
            self.stopped_early = True
            self.model.stop_training = True
            log.info("stage %s: early stopping after epoch %d (%s has not improved "
                     "for %d epoch(s); best %.4f at epoch %s)", self.stage,
                     epoch + 1, self.monitor, waited,
                     self.values[best] if best is not None else float("nan"),
                     best + 1 if best is not None else "none")

    def on_train_end(self, logs=None):
        best = self.best_epoch
        if best is None or best == self.last_epoch:
            return
        if best not in self.files:  # a resume from an older backup lost it
            log.warning("stage %s: the weights of the best epoch, %d, were lost "
                        "when the run resumed from an earlier backup; the student "
                        "keeps epoch %d's", self.stage, best + 1, self.last_epoch + 1)
            return
        with warnings.catch_warnings():  # kept without the optimizer's state
            warnings.filterwarnings("ignore", "Skipping variable loading for optimizer")
            self._target().load_weights(os.path.join(self.folder, self.files[best]))
        log.info("stage %s: restored the best epoch, %d (%s %.4f)", self.stage,
                 best + 1, self.monitor, self.values[best])

    # ---------------------------------------------------------- results
    def summary(self):
        """`{"monitor", "mode", "best_epoch" (1-based), "best_value",
        "epochs_run", "stopped_early", "values"}` (None values before any
        epoch)."""
        best = self.best_epoch
        return {
            "monitor": self.monitor,
            "mode": "max" if self.maximize else "min",
            "best_epoch": None if best is None else best + 1,
            "best_value": None if best is None else self.values[best],
            "epochs_run": len(self.values),
            "stopped_early": self.stopped_early,
            "values": [self.values[e] for e in sorted(self.values)],
        }

    def cleanup(self):
        """Removes the kept weights and state (after the stage is saved)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def check_early_stopping(config, stages, file=None):
    """Raises `ConfigError` when `early_stopping.stages` names a stage the
    method does not have (`config`: an `EarlyStoppingConfig` or None)."""
    names = [stage.name for stage in stages]
    for i, name in enumerate((config.stages or []) if config else []):
        if name not in names:
            raise ConfigError(
                f"no stage {name!r} in this method{did_you_mean(name, names)}; its "
                f"stages: {', '.join(names)}",
                file, f"training.early_stopping.stages[{i}]", name)
