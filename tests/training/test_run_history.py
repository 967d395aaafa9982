"""`RunHistory`: per-epoch logs, window means every N steps, TensorBoard,
persistence and resumption."""

import glob
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import testing
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training.callbacks import RunHistory


class FakeOptimizer:
    def __init__(self):
        self.iterations = 0


class FakeModel:
    def __init__(self):
        self.optimizer = FakeOptimizer()


def drive(history, epochs):
    """Feeds `history` Keras-style running means of per-batch losses
    `epochs[e][b]` (each batch advancing the optimizer by one step)."""
    model = FakeModel()
    history.set_model(model)
    history.on_train_begin()
    for e, losses in enumerate(epochs):
        history.on_epoch_begin(e)
        for b in range(len(losses)):
            model.optimizer.iterations += 1
            history.on_train_batch_end(b, {"loss": float(np.mean(losses[:b + 1]))})
        history.on_epoch_end(e, {"loss": float(np.mean(losses)), "val_loss": 9.0 + e})
    history.on_train_end()
    return history


def test_window_means_by_hand_and_the_partial_last_window():
    history = drive(RunHistory(every=2), [[4.0, 2.0, 3.0, 1.0, 5.0], [1.0, 1.0, 4.0]])
    # epoch 1: steps 1-2 -> mean 3, 3-4 -> 2, 5 -> 5 (partial, at the epoch end);
    # epoch 2: steps 6-7 -> 1, 8 -> 4
    assert history.steps["step"] == [2, 4, 5, 7, 8]
    assert history.steps["epoch"] == [0, 0, 0, 1, 1]
    np.testing.assert_allclose(history.steps["loss"], [3.0, 2.0, 5.0, 1.0, 4.0])
    assert history.epoch_history() == {"loss": [3.0, 2.0], "val_loss": [9.0, 10.0]}


def test_persisted_history_is_continued_by_a_resumed_fit(tmp_path):
    path = str(tmp_path / "history.json")
    drive(RunHistory(path, every=1), [[1.0, 3.0], [2.0, 2.0], [5.0, 7.0]])
    saved = json.load(open(path))
    assert sorted(saved["epochs"]) == ["0", "1", "2"]
    # A run killed in epoch 3 and resumed there: epochs 1-2 are kept, epoch
    # 3 is recorded again (not twice).
    resumed = RunHistory(path, every=1)
    model = FakeModel()
    model.optimizer.iterations = 4
    resumed.set_model(model)
    resumed.on_train_begin()
    resumed.on_epoch_begin(2)
    assert resumed.steps["step"] == [1, 2, 3, 4]
    for b, running in enumerate([6.0, 7.0]):
        model.optimizer.iterations += 1
        resumed.on_train_batch_end(b, {"loss": running})
    resumed.on_epoch_end(2, {"loss": 7.0})
    assert resumed.epoch_history()["loss"] == [2.0, 2.0, 7.0]
    assert resumed.steps["step"] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose(resumed.steps["loss"], [1.0, 3.0, 2.0, 2.0, 6.0, 8.0])


def test_every_must_be_positive():
    with pytest.raises(ValueError, match="every must be >= 1"):
        RunHistory(every=0)


def test_with_fit_every_step_is_that_batch_loss_and_tensorboard_has_them(tmp_path):
    teacher = testing.tiny_bert_classifier(num_layers=2, seed=1)
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    distiller = Distiller(student, teacher, [SoftTargetCrossEntropy(2.0, weight=0.5),
                                             HardLabelCrossEntropy(weight=0.5)])
    distiller.compile(optimizer=keras.optimizers.SGD(0.1), jit_compile=False)

    class BatchMeans(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.running = []

        def on_train_batch_end(self, batch, logs=None):
            self.running.append(float(logs["loss"]))

    means = BatchMeans()
    history = RunHistory(every=1, log_dir=str(tmp_path / "tb"))
    distiller.fit(testing.toy_dataset(64, 16), epochs=1, verbose=0,
                  callbacks=[means, history])
    # Each batch's own loss, from the running means: n*m_n - (n-1)*m_{n-1}.
    running = means.running
    own = [running[0]] + [(n + 1) * running[n] - n * running[n - 1]
                          for n in range(1, len(running))]
    assert history.steps["step"] == [1, 2, 3, 4]
    np.testing.assert_allclose(history.steps["loss"], own, rtol=1e-5)
    assert set(history.steps) >= {"step", "epoch", "loss", "soft_ce", "hard_ce"}

    values = {}
    for event_file in glob.glob(str(tmp_path / "tb" / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(event_file):
            for value in event.summary.value:
                if value.tag == "loss":
                    values[event.step] = float(tf.make_ndarray(value.tensor))
    assert sorted(values) == [1, 2, 3, 4]
    np.testing.assert_allclose([values[s] for s in (1, 2, 3, 4)], own, rtol=1e-5)
