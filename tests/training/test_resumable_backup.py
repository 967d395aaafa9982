"""`ResumableBackup`: a backup after every epoch but the one `fit` ends with,
and a resumed `fit` that ends where an uninterrupted one does. (A killed
`kdplug run`: tests/run/test_resume.py.)"""

import json
import logging
import os

import keras
import numpy as np
import pytest

from kdplug.training.callbacks import ResumableBackup

STEPS = 4  # batches per epoch


def toy_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8 * STEPS, 3)).astype("float32")
    return x, (x @ np.array([1.0, -2.0, 0.5], "float32"))[:, None]


def toy_model():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    return model


class BackedUpEpochs(keras.callbacks.Callback):
    """After the backup at each epoch's end: the epoch its backup says."""

    def __init__(self, backup_dir):
        super().__init__()
        self.path = os.path.join(backup_dir, "training_metadata.json")
        self.seen = []

    def on_epoch_end(self, epoch, logs=None):
        with open(self.path) as f:
            self.seen.append(json.load(f)["epoch"])


class StopAfter(keras.callbacks.Callback):
    def __init__(self, epoch, error=None):
        super().__init__()
        self.epoch, self.error = epoch, error

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            if self.error:
                raise self.error
            self.model.stop_training = True


def fit(model, backup, epochs=3, before=(), after=()):
    x, y = toy_data()
    return model.fit(x, y, batch_size=8, epochs=epochs, shuffle=False, verbose=0,
                     callbacks=[*before, ResumableBackup(backup, "toy"), *after])


def test_every_epoch_but_the_last_is_backed_up(tmp_path):
    backup = str(tmp_path / "backup")
    seen = BackedUpEpochs(backup)
    history = fit(toy_model(), backup, epochs=3, after=[seen])
    assert len(history.history["loss"]) == 3
    assert seen.seen == [1, 2, 2]  # epoch 3 ends fit: not written
    assert not os.path.exists(backup)  # removed when fit ends


def test_an_epoch_after_which_a_callback_stops_fit_is_not_backed_up(tmp_path):
    backup = str(tmp_path / "backup")
    seen = BackedUpEpochs(backup)
    # early stopping (KeepBestEpoch) sits before the backup, as in `kdplug run`
    history = fit(toy_model(), backup, epochs=5, before=[StopAfter(1)], after=[seen])
    assert len(history.history["loss"]) == 2
    assert seen.seen == [1, 1]
    assert not os.path.exists(backup)


def test_an_interrupted_fit_resumes_at_its_first_unfinished_epoch(tmp_path, caplog):
    expected = toy_model()
    uninterrupted = fit(expected, str(tmp_path / "plain"), epochs=3)
    backup = str(tmp_path / "backup")
    with pytest.raises(RuntimeError, match="killed"):  # after epoch 2's backup
        fit(toy_model(), backup, epochs=3, after=[StopAfter(1, RuntimeError("killed"))])
    assert os.path.exists(backup)
    model = toy_model()  # a new process
    with caplog.at_level(logging.INFO, "kdplug"):
        resumed = fit(model, backup, epochs=3)
    assert f"stage toy: resumed from {backup} at epoch 3 (2 finished)" in caplog.messages
    np.testing.assert_allclose(resumed.history["loss"], uninterrupted.history["loss"][2:],
                               rtol=1e-6)
    assert int(model.optimizer.iterations.numpy()) == 3 * STEPS
    for got, want in zip(model.get_weights(), expected.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not os.path.exists(backup)
