"""`ProgressBar`: Keras' progress bar without an ETA from the compiling step."""

import sys
import time

import keras


class ProgressBar(keras.callbacks.ProgbarLogger):
    """Keras' progress bar (and its epoch lines at `verbose=2`), except for
    the first step of a `fit`.

    That step traces and compiles the training function (with XLA, minutes
    for a large model), and Keras' bar extrapolates its ETA from it: an
    epoch of a few minutes shows `24:57` after its first step. Here the bar
    reads `compiling...` while the first step runs and the time it took once
    it ends; the ETA appears from the second step on, from the steps after
    the first (as Keras estimates it from then on). Later epochs, compiled
    already, show Keras' bar unchanged.

    `fit` draws it instead of its own bar when it is among the callbacks:
    kdplug's runs (`progress_lines`) and `kdplug.distill()` pass it.

    Examples:

    ```python
    model.fit(ds, epochs=3, verbose=1, callbacks=[ProgressBar()])
    # Epoch 1/3
    #   0/331 - compiling...
    #   1/331 - first step 95s (compiling), ETA from the next steps
    # 120/331 ━━━━━━━━━━━━━━━━━━━━ 2s 11ms/step - loss: 0.4210
    ```
    """

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._first_step = True

    def on_train_batch_begin(self, batch, logs=None):
        if self._first_step:
            self._started = time.time()
            if self.verbose == 1 and self.progbar is not None:
                self._line(0, "compiling...")

    def on_train_batch_end(self, batch, logs=None):
        if not self._first_step or self.verbose != 1 or self.progbar is None:
            self._first_step = False
            return super().on_train_batch_end(batch, logs)
        self._first_step = False
        # Keras' bookkeeping (the metrics' running means, the time its ETAs
        # count from) without its line
        self.progbar.verbose = 0
        try:
            super().on_train_batch_end(batch, logs)
        finally:
            self.progbar.verbose = 1
        self._line(batch + 1, f"first step {time.time() - self._started:.0f}s "
                              "(compiling), ETA from the next steps")

    def _line(self, step, text):
        """Draws `<step>/<steps> - <text>` where Keras draws its bar; Keras'
        next line overwrites it."""
        steps = self.progbar.target
        count = f"{step:{len(str(steps))}d}/{steps}" if steps else f"{step:7d}/Unknown"
        line = f"{count} - {text}"
        if keras.config.is_interactive_logging_enabled():  # where Keras prints
            sys.stdout.write(f"\r{line}")
            sys.stdout.flush()
        self.progbar._prev_total_width = len(line)  # what Keras' next line clears
