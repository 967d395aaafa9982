"""`ResumableBackup`: a backup after every epoch but the one `fit` ends with,
one weights file named by its record, and a resumed `fit` that ends where an
uninterrupted one does, whenever the kill came. (A killed `kdplug run`:
tests/run/test_resume.py.)"""

import logging
import os

import keras
import numpy as np
import pytest

from kdplug import storage
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
    """After the backup at each epoch's end: the epochs its backup holds and
    the files in its folder."""

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir
        self.seen, self.files = [], []

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(ResumableBackup(self.backup_dir).backed_up_epochs())
        self.files.append(sorted(os.listdir(self.backup_dir)))


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
    # one weights file, the one the record names: no copy of the one before
    assert seen.files[0] == ["backup.json", "epoch-0001.weights.h5"]
    assert seen.files[1] == seen.files[2] == ["backup.json", "epoch-0002.weights.h5"]
    assert not os.path.exists(backup)  # removed when fit ends


def test_an_epoch_after_which_a_callback_stops_fit_is_not_backed_up(tmp_path):
    backup = str(tmp_path / "backup")
    seen = BackedUpEpochs(backup)
    # early stopping (KeepBestEpoch) sits before the backup, as in `kdplug run`
    history = fit(toy_model(), backup, epochs=5, before=[StopAfter(1)], after=[seen])
    assert len(history.history["loss"]) == 2
    assert seen.seen == [1, 1]
    assert not os.path.exists(backup)


@pytest.fixture
def uninterrupted(tmp_path):
    """`(model, History)` of a fit that nothing interrupts."""
    model = toy_model()
    return model, fit(model, str(tmp_path / "plain"), epochs=3)


def assert_resumed_like(model, resumed, uninterrupted, first_epoch):
    """`resumed` (the History of `model`'s fit, resumed at 1-based
    `first_epoch`) ends like the `uninterrupted` fit: the same losses for
    its epochs, optimizer steps and weights."""
    expected, history = uninterrupted
    np.testing.assert_allclose(resumed.history["loss"],
                               history.history["loss"][first_epoch - 1:], rtol=1e-6)
    assert int(model.optimizer.iterations.numpy()) == 3 * STEPS
    for got, want in zip(model.get_weights(), expected.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_interrupted_fit_resumes_at_its_first_unfinished_epoch(
        tmp_path, caplog, uninterrupted):
    backup = str(tmp_path / "backup")
    with pytest.raises(RuntimeError, match="killed"):  # after epoch 2's backup
        fit(toy_model(), backup, epochs=3, after=[StopAfter(1, RuntimeError("killed"))])
    assert os.path.exists(backup)
    model = toy_model()  # a new process
    with caplog.at_level(logging.INFO, "kdplug"):
        resumed = fit(model, backup, epochs=3)
    assert f"stage toy: resumed from {backup} at epoch 3 (2 finished)" in caplog.messages
    assert_resumed_like(model, resumed, uninterrupted, first_epoch=3)
    assert not os.path.exists(backup)


@pytest.mark.slow
def test_a_kill_between_the_weights_and_their_record_resumes_from_the_backup_before(
        tmp_path, monkeypatch, uninterrupted):
    """Epoch 2's weights are on disk, its record is not: the record still
    names epoch 1's file, so the resumed fit trains epoch 2 again from epoch
    1's state (Keras' layout resumed epoch 2 from epoch 2's weights: one
    epoch too many)."""
    backup = str(tmp_path / "backup")
    write_json = storage.write_json

    def killed_at_epoch_2(path, obj, **kwargs):
        if obj.get("epoch") == 2:
            raise RuntimeError("killed")
        return write_json(path, obj, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(storage, "write_json", killed_at_epoch_2)
        with pytest.raises(RuntimeError, match="killed"):
            fit(toy_model(), backup, epochs=3)
    assert sorted(os.listdir(backup)) == [
        "backup.json", "epoch-0001.weights.h5", "epoch-0002.weights.h5"]
    model = toy_model()
    resumed = fit(model, backup, epochs=3)
    assert_resumed_like(model, resumed, uninterrupted, first_epoch=2)


def test_a_backup_in_keras_layout_is_resumed(tmp_path, caplog, uninterrupted):
    """A run interrupted under the earlier kdplug, whose backups were Keras'
    `BackupAndRestore(double_checkpoint=True)`, resumes."""
    backup = str(tmp_path / "backup")
    x, y = toy_data()
    with pytest.raises(RuntimeError, match="killed"):
        toy_model().fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0,
                        callbacks=[keras.callbacks.BackupAndRestore(
                            backup, double_checkpoint=True),
                            StopAfter(1, RuntimeError("killed"))])
    assert "latest.weights.h5" in os.listdir(backup)
    model = toy_model()
    with caplog.at_level(logging.INFO, "kdplug"):
        resumed = fit(model, backup, epochs=3)
    assert f"stage toy: resumed from {backup} at epoch 3 (2 finished)" in caplog.messages
    assert_resumed_like(model, resumed, uninterrupted, first_epoch=3)


def test_an_unreadable_backup_is_reported_and_training_starts_over(
        tmp_path, caplog, uninterrupted):
    backup = str(tmp_path / "backup")
    with pytest.raises(RuntimeError, match="killed"):
        fit(toy_model(), backup, epochs=3, after=[StopAfter(1, RuntimeError("killed"))])
    weights = os.path.join(backup, "epoch-0002.weights.h5")
    with open(weights, "r+b") as f:  # a damaged disk
        f.truncate(100)
    model = toy_model()
    with caplog.at_level(logging.INFO, "kdplug"):
        resumed = fit(model, backup, epochs=3)
    assert any(m.startswith(f"stage toy: the backup {weights} cannot be loaded")
               for m in caplog.messages), caplog.messages
    assert (f"stage toy: no backup in {backup} can be loaded; training starts over"
            in caplog.messages)
    assert_resumed_like(model, resumed, uninterrupted, first_epoch=1)


def test_a_load_that_fails_half_way_leaves_the_state_training_starts_from(
        tmp_path, uninterrupted):
    backup = str(tmp_path / "backup")
    with pytest.raises(RuntimeError, match="killed"):
        fit(toy_model(), backup, epochs=3, after=[StopAfter(1, RuntimeError("killed"))])
    model = toy_model()

    def half_way(path):  # some variables read, then the file ends
        model.weights[0].assign(np.zeros(model.weights[0].shape))
        model.optimizer.iterations.assign(99)
        raise OSError("truncated file")

    model.load_weights = half_way
    resumed = fit(model, backup, epochs=3)
    assert_resumed_like(model, resumed, uninterrupted, first_epoch=1)


def test_a_backup_kept_past_fit_resumes_a_kill_before_the_result_is_stored(
        tmp_path, uninterrupted):
    """`remove_at_end=False` (`kdplug run` removes it once the stage is
    stored): a kill after `fit` but before that trains the last epoch
    again, not all of them."""
    backup = str(tmp_path / "backup")
    x, y = toy_data()
    kept = ResumableBackup(backup, "toy", remove_at_end=False)
    toy_model().fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0,
                    callbacks=[kept])
    assert kept.backed_up_epochs() == 2  # then killed: nothing stored
    model = toy_model()
    resumed = fit(model, backup, epochs=3)
    assert_resumed_like(model, resumed, uninterrupted, first_epoch=3)
    kept.remove()
    assert not os.path.exists(backup)
