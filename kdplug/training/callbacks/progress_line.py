"""`ProgressLine`: training progress as occasional log lines, and how a
`fit` shows progress for `training.verbose` (a bar on a terminal, else lines)."""

import logging
import sys
import time

import keras

from kdplug.training.callbacks.progress_bar import ProgressBar

log = logging.getLogger(__name__)


class ProgressLine(keras.callbacks.Callback):
    """Logs one progress line every `interval` seconds and one per epoch.

    The alternative to Keras' progress bar where output is not a terminal
    (a log file, CI): a bar redraws its line for every batch, which a file
    keeps in full. Lines look like

    `stage distill: epoch 1/3, step 120/331, loss 0.4210, 7.9 steps/s, ETA 0:26`
    `stage distill: epoch 1/3 done in 42 s: loss 0.3981, soft_ce 0.2177, val_loss 0.3507`

    The speed and the ETA count the steps after the epoch's first: the
    first step of a `fit` traces and compiles the training function
    (minutes with XLA for a large model), which would make the ETA
    hours; a line during it says `first step <s> s (compiling)`.

    Args:
        stage: the stage name the lines start with.
        interval: seconds between in-epoch lines.
        clock: seconds, for tests.

    Examples:

    ```python
    distiller.fit(ds, epochs=3, verbose=0, callbacks=[ProgressLine("distill")])
    ```
    """

    def __init__(self, stage="train", interval=30.0, clock=time.perf_counter):
        super().__init__()
        self.stage = stage
        self.interval = float(interval)
        self.clock = clock
        self._compiles = True  # the next step is the fit's first

    def on_train_begin(self, logs=None):
        self._compiles = True

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._start = self._last = self.clock()
        self._first = None  # when the epoch's first step ended

    def on_train_batch_end(self, batch, logs=None):
        now = self.clock()
        compiled, self._compiles = self._compiles, False
        if self._first is None:
            self._first = now
        if now - self._last < self.interval:
            return
        self._last = now
        steps = self.params.get("steps")
        if now == self._first:  # the first step, over `interval`
            speed = f"first step {now - self._start:.0f} s" + (
                " (compiling)" if compiled else "")
        else:  # the steps after the first
            rate = batch / max(now - self._first, 1e-9)
            speed = f"{rate:.1f} steps/s" + (
                f", ETA {_duration((steps - batch - 1) / rate)}" if steps else "")
        log.info("stage %s: %s, step %d%s, %s, %s", self.stage,
                 self._epochs_text(), batch + 1, f"/{steps}" if steps else "",
                 _format(logs, keys=("loss",)), speed)

    def on_epoch_end(self, epoch, logs=None):
        seconds = self.clock() - self._start
        log.info("stage %s: %s done in %.0f s: %s", self.stage, self._epochs_text(),
                 seconds, _format(logs))

    def _epochs_text(self):
        epochs = self.params.get("epochs")
        return f"epoch {self._epoch + 1}" + (f"/{epochs}" if epochs else "")


def _duration(seconds):
    """`h:mm:ss`, `m:ss` or `<s>s`, as Keras' bar writes an ETA."""
    seconds = int(max(seconds, 0))
    if seconds >= 3600:
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if seconds >= 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


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


def on_terminal(stream=None):
    """Whether `stream` (stdout) is a terminal, where Keras draws its bar."""
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def keras_verbosity(setting):
    """Keras' `verbose=` for `training.verbose`: `"auto"` is a progress bar
    (1) on a terminal and silent (0) otherwise, where `ProgressLine` logs
    instead; 0, 1 and 2 are passed through."""
    if setting == "auto":
        return 1 if on_terminal() else 0
    return int(setting)


def wants_progress_lines(setting):
    """Whether `ProgressLine` should log (`"auto"` off a terminal)."""
    return setting == "auto" and not on_terminal()


def progress_lines(name, setting):
    """How a `fit` shows its progress for `training.verbose`:
    `[ProgressLine(name)]` where `wants_progress_lines(setting)`, else
    `[ProgressBar()]` (Keras' bar and epoch lines without an ETA from the
    compiling first step; silent at `verbose=0`)."""
    if not wants_progress_lines(setting):
        return [ProgressBar()]
    return [ProgressLine(name)]
