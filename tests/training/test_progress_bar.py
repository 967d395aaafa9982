"""Progress without an ETA from the first step (issue #51, item 7): that
step traces and compiles the training function (minutes with XLA), so an
ETA extrapolated from it reads `24:57` for an epoch of seconds. The bar
(`ProgressBar`, what `distill()` and the runs draw on a terminal) says
`compiling...` instead (the log lines, `ProgressLine`:
tests/training/test_progress_line.py)."""

import re
import time

import keras
import numpy as np
import tensorflow as tf

import kdplug

STEPS = 30
COMPILE_S = 1.0


class SlowFirstStep(keras.callbacks.Callback):
    """Makes a fit's first step take `COMPILE_S` longer, as compiling does."""

    def on_train_begin(self, logs=None):
        self.first = True

    def on_train_batch_end(self, batch, logs=None):
        if self.first:
            self.first = False
            time.sleep(COMPILE_S)


def toy_models():
    teacher = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="teacher")
    student = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="student")
    return teacher, student


def etas(out):
    """Every ETA (in seconds) Keras' bar drew: the bold time after a bar
    that is not finished (`m:ss` or `<s>s` then the step time)."""
    found = re.findall(r"\x1b\[1m(?:(\d+):)?(\d+)s?\x1b\[0m \d+m?s/step", out)
    return [int(m or 0) * 60 + int(s) for m, s in found]


def test_distill_draws_no_eta_from_the_compiling_first_step(capsys):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * 4, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    teacher, student = toy_models()
    kdplug.distill(teacher=teacher, student=student, train_data=data, epochs=1,
                   verbose=1, callbacks=[SlowFirstStep()])
    out = capsys.readouterr().out
    assert " 0/30 - compiling..." in out
    assert re.search(r" 1/30 - first step \ds \(compiling\), ETA from the next steps", out)
    # Keras' own bar drew `29s` here (1 s for the first step, times 29)
    assert etas(out) and max(etas(out)) < 10, out


def test_a_bar_the_caller_gives_is_the_only_one(capsys):
    data = tf.data.Dataset.from_tensor_slices(
        (np.zeros((8, 4), "float32"), np.zeros(8, "int32"))).batch(4)
    teacher, student = toy_models()
    kdplug.distill(teacher=teacher, student=student, train_data=data, epochs=1,
                   verbose=1, callbacks=[keras.callbacks.ProgbarLogger()])
    out = capsys.readouterr().out
    assert "compiling..." not in out and "2/2" in out
