"""`ProgressLine`: training progress as occasional log lines."""

import logging
import time

import keras

log = logging.getLogger(__name__)


class ProgressLine(keras.callbacks.Callback):
    """Logs one progress line every `interval` seconds and one per epoch.

    The alternative to Keras' progress bar where output is not a terminal
    (a log file, CI): a bar redraws its line for every batch, which a file
    keeps in full. Lines look like

    `stage distill: epoch 1/3, step 120/331, loss 0.4210, 7.9 steps/s`
    `stage distill: epoch 1/3 done in 42 s: loss 0.3981, soft_ce 0.2177, val_loss 0.3507`

    Args:
        stage: the stage name the lines start with.
        interval: seconds between in-epoch lines.

    Examples:

    ```python
    distiller.fit(ds, epochs=3, verbose=0, callbacks=[ProgressLine("distill")])
    ```
    """

    def __init__(self, stage="train", interval=30.0):
        super().__init__()
        self.stage = stage
        self.interval = float(interval)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._start = self._last = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        now = time.perf_counter()
        if now - self._last < self.interval:
            return
        self._last = now
        steps = self.params.get("steps")
        rate = (batch + 1) / max(now - self._start, 1e-9)
        log.info("stage %s: %s, step %d%s, %s, %.1f steps/s", self.stage,
                 self._epochs_text(), batch + 1, f"/{steps}" if steps else "",
                 _format(logs, keys=("loss",)), rate)

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self._start
        log.info("stage %s: %s done in %.0f s: %s", self.stage, self._epochs_text(),
                 seconds, _format(logs))

    def _epochs_text(self):
        epochs = self.params.get("epochs")
        return f"epoch {self._epoch + 1}" + (f"/{epochs}" if epochs else "")


def _format(logs, keys=None):
    items = []
    for key, value in (logs or {}).items():
        if keys is not None and key not in keys:
            continue
        try:
            items.append(f"{key} {float(value):.4f}")
        except (TypeError, ValueError):
            continue
    return ", ".join(items) or "no logs"
