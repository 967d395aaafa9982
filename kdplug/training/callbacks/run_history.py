"""`RunHistory`: a stage's history per epoch and per step, kept on disk."""

import math

import keras
import tensorflow as tf

from kdplug import storage


class RunHistory(keras.callbacks.Callback):
    """Records a stage's logged values per epoch and every `every` steps.

    Per epoch: the epoch-end logs (`loss`, each term, metrics, `val_*`), as
    Keras' `History` has them. Per step: every `every` optimizer steps (and
    at the end of each epoch), the mean of each logged training value over
    the steps since the last record, written to TensorBoard (`log_dir`, one
    scalar per value, x axis = optimizer step) and kept in `steps`. Keras'
    batch logs are running means since the start of the epoch, so the mean
    over a window of steps is recovered exactly from two of them (batches of
    equal size; a smaller last batch counts as a whole one).

    Both are written to `path` (JSON, atomically) at the end of every epoch.
    When `path` already exists, a resumed `fit` continues that history: the
    recorded epochs before the one `fit` resumes at are kept, so the history
    of an interrupted and resumed stage covers every epoch, like an
    uninterrupted one.

    Args:
        path: the JSON file (None: in memory only).
        every: steps per record (>= 1).
        log_dir: a TensorBoard folder for the step scalars (None: none).

    Examples:

    ```python
    history = RunHistory("runs/x/backup/01-distill.history.json", every=10,
                         log_dir="runs/x/tensorboard/01-distill/steps")
    distiller.fit(ds, epochs=3, callbacks=[history])
    history.epoch_history()["loss"]     # one value per epoch
    history.steps["step"], history.steps["loss"]
    ```
    """

    def __init__(self, path=None, every=10, log_dir=None):
        super().__init__()
        if int(every) < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.path = path
        self.every = int(every)
        self.log_dir = log_dir
        self.epochs = {}  # epoch index -> {key: value}
        self.steps = {"step": [], "epoch": []}
        self._epoch = 0
        self._writer = None
        recorded = storage.read_json(path) if path else None
        if recorded:
            self.epochs = {int(k): v for k, v in recorded.get("epochs", {}).items()}
            self.steps = recorded.get("steps") or self.steps

    # ------------------------------------------------------------ results
    def epoch_history(self):
        """`{key: [value per epoch]}` in epoch order (like `History.history`)."""
        out = {}
        for epoch in sorted(self.epochs):
            for key, value in self.epochs[epoch].items():
                out.setdefault(key, []).append(value)
        return out

    # ---------------------------------------------------------- callbacks
    def on_train_begin(self, logs=None):
        if self.log_dir and self._writer is None:
            self._writer = tf.summary.create_file_writer(self.log_dir)

    def on_epoch_begin(self, epoch, logs=None):
        # A resumed fit starts at a later epoch: what was recorded from that
        # epoch on is trained again.
        self._keep_before(epoch)
        self._epoch = int(epoch)
        self._batches = 0
        self._last = 0
        self._totals = {}
        self._logs = None

    def on_train_batch_end(self, batch, logs=None):
        self._batches = batch + 1
        self._logs = logs
        if self._batches - self._last >= self.every:
            self._record()

    def on_epoch_end(self, epoch, logs=None):
        if self._logs is not None and self._batches > self._last:
            self._record()
        self.epochs[int(epoch)] = _numbers(logs)
        if self.path:
            storage.write_json(self.path, {
                "epochs": {str(k): v for k, v in sorted(self.epochs.items())},
                "steps": self.steps,
            })

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.flush()

    # ------------------------------------------------------------ helpers
    def _record(self):
        n = self._batches
        window = n - self._last
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        row = {}
        for key, mean in _numbers(self._logs).items():
            total = mean * n
            row[key] = (total - self._totals.get(key, 0.0)) / window
            self._totals[key] = total
        self._last = n
        width = len(self.steps["step"])
        self.steps["step"].append(step)
        self.steps["epoch"].append(self._epoch)
        for key, value in row.items():
            self.steps.setdefault(key, [math.nan] * width).append(value)
        for values in self.steps.values():
            if len(values) == width:  # a key this record lacks
                values.append(math.nan)
        if self._writer is not None:
            with self._writer.as_default():
                for key, value in row.items():
                    tf.summary.scalar(key, value, step=step)

    def _keep_before(self, epoch):
        """Forgets what was recorded from `epoch` on (a resumed `fit`
        trains those epochs again)."""
        for e in [e for e in self.epochs if e >= epoch]:
            del self.epochs[e]
        keep = [i for i, e in enumerate(self.steps["epoch"]) if e < epoch]
        self.steps = {k: [v[i] for i in keep] for k, v in self.steps.items()}


def _numbers(logs):
    out = {}
    for key, value in (logs or {}).items():
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            continue
    return out
