"""`KeepBestEpoch`: the best epoch by hand-picked values, restored, resumed,
and early stopping end to end (a toy `kdplug run` and teacher fine-tuning:
tests/run/test_finished_run.py, which shares that run)."""

import json
import math
import os

import keras
import numpy as np
import pytest

from kdplug.errors import ConfigError
from kdplug.training.callbacks import KeepBestEpoch


def constant_model():
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    return model


def play(callback, model, values, resume_at=0):
    """Drives the callback like `fit` would: before each epoch's end the
    weights become the epoch number, so restored weights name their epoch.
    Returns the epochs that ran (stopping early ends the loop)."""
    callback.set_model(model)
    callback.set_params({"epochs": len(values)})
    model.stop_training = False
    callback.on_train_begin()
    ran = []
    for epoch in range(resume_at, len(values)):
        model.set_weights([np.full((1, 1), epoch, "float32"), np.zeros(1, "float32")])
        callback.on_epoch_end(epoch, {"val_accuracy": values[epoch],
                                      "val_loss": -values[epoch]})
        ran.append(epoch)
        if model.stop_training:
            break
    callback.on_train_end()
    return ran


def kept_epoch(model):
    return int(model.get_weights()[0][0, 0])


def test_stops_after_patience_and_restores_the_best_epoch(tmp_path):
    model = constant_model()
    best = KeepBestEpoch(str(tmp_path / "best"), "val_accuracy", maximize=True,
                         patience=2)
    # best at epoch index 1 (0.7); 0.6 and 0.65 do not beat it -> stop after index 3
    ran = play(best, model, [0.5, 0.7, 0.6, 0.65, 0.9])
    assert ran == [0, 1, 2, 3]
    assert kept_epoch(model) == 1
    summary = best.summary()
    assert summary == {"monitor": "val_accuracy", "mode": "max", "best_epoch": 2,
                       "best_value": 0.7, "epochs_run": 4, "stopped_early": True,
                       "values": [0.5, 0.7, 0.6, 0.65]}


def test_patience_running_out_at_the_last_epoch_is_not_stopping_early(tmp_path):
    model = constant_model()
    best = KeepBestEpoch(str(tmp_path / "best"), "val_accuracy", patience=2)
    assert play(best, model, [0.5, 0.7, 0.6, 0.6]) == [0, 1, 2, 3]
    assert best.summary()["stopped_early"] is False and kept_epoch(model) == 1


def test_min_mode_min_delta_and_nan(tmp_path):
    model = constant_model()
    best = KeepBestEpoch(str(tmp_path / "best"), "val_loss", maximize=False,
                         patience=None, min_delta=0.05)
    # -0.5, then -0.53 (better by 0.03 < min_delta: not an improvement), NaN
    # (never one), -0.6 (better by 0.1): the kept epoch is index 3
    play(best, model, [0.5, 0.53, math.nan, 0.6, 0.62])
    assert kept_epoch(model) == 3
    assert best.summary()["best_value"] == -0.6
    assert best.summary()["stopped_early"] is False  # patience None never stops


def test_the_last_epoch_best_keeps_the_weights_in_place(tmp_path):
    model = constant_model()
    best = KeepBestEpoch(str(tmp_path / "best"), "val_accuracy", patience=3)
    play(best, model, [0.1, 0.2, 0.3])
    assert kept_epoch(model) == 2 and best.summary()["best_epoch"] == 3


def test_a_resumed_stage_remembers_the_epochs_before_the_kill(tmp_path):
    folder = str(tmp_path / "best")
    first = KeepBestEpoch(folder, "val_accuracy", patience=2)
    model = constant_model()
    values = [0.5, 0.8, 0.6, 0.7, 0.4]
    first.set_model(model)
    first.on_train_begin()
    for epoch in range(2):  # killed after epoch index 1: no on_train_end
        model.set_weights([np.full((1, 1), epoch, "float32"), np.zeros(1, "float32")])
        first.on_epoch_end(epoch, {"val_accuracy": values[epoch]})
    resumed = KeepBestEpoch(folder, "val_accuracy", patience=2)
    other = constant_model()
    ran = play(resumed, other, values, resume_at=2)
    assert ran == [2, 3]  # two epochs without beating index 1's 0.8
    assert kept_epoch(other) == 1  # restored from the first process's file
    assert resumed.summary()["values"] == [0.5, 0.8, 0.6, 0.7]
    resumed.cleanup()
    assert not (tmp_path / "best").exists()


def test_a_monitor_the_stage_does_not_log_names_what_it_logs(tmp_path):
    best = KeepBestEpoch(str(tmp_path / "best"), "val_f1", file="x.yaml")
    best.set_model(constant_model())
    best.on_train_begin()
    with pytest.raises(ConfigError) as info:
        best.on_epoch_end(0, {"loss": 1.0, "val_loss": 1.0, "val_accuracy": 0.5})
    message = str(info.value)
    assert "x.yaml: training.early_stopping.monitor" in message
    assert "does not log 'val_f1'" in message and "val_accuracy, val_loss" in message


# The early-stopping end-to-end run (a toy `kdplug run` whose student and
# teacher keep their best epochs) is shared with the evaluation-metrics checks:
# tests/run/test_finished_run.py::test_early_stopping_keeps_the_best_epoch_and_reports_it


def test_a_resumed_epoch_that_no_longer_wins_restores_the_best_before_it(tmp_path):
    """Killed after this callback wrote epoch index 2 (a new best, 0.9) but
    before that epoch's backup: the resumed run trains index 2 again, and
    its new pass (another data order) reaches 0.6 only. The best is index
    1 again, whose file was kept beside index 2's."""
    folder = str(tmp_path / "best")
    first = KeepBestEpoch(folder, "val_accuracy", patience=2)
    model = constant_model()
    first.set_model(model)
    first.set_params({"epochs": 5})
    first.on_train_begin()
    for epoch, value in enumerate([0.5, 0.8, 0.9]):  # no on_train_end: killed
        model.set_weights([np.full((1, 1), epoch, "float32"), np.zeros(1, "float32")])
        first.on_epoch_end(epoch, {"val_accuracy": value})
    assert sorted(os.listdir(folder)) == ["best-0002.weights.h5", "best-0003.weights.h5",
                                          "state.json"]
    resumed = KeepBestEpoch(folder, "val_accuracy", patience=2)
    other = constant_model()
    assert play(resumed, other, [0.5, 0.8, 0.6, 0.7, 0.4], resume_at=2) == [2, 3]
    assert kept_epoch(other) == 1
    assert resumed.summary()["best_epoch"] == 2
    assert sorted(os.listdir(folder)) == ["best-0002.weights.h5", "state.json"]


def test_a_stage_interrupted_under_an_earlier_kdplug_resumes(tmp_path):
    """Its state has no `kept`; its one file, `best.weights.h5`, holds the
    best epoch."""
    folder = tmp_path / "best"
    folder.mkdir()
    model = constant_model()
    model.set_weights([np.full((1, 1), 1, "float32"), np.zeros(1, "float32")])
    model.save_weights(str(folder / "best.weights.h5"))
    (folder / "state.json").write_text(json.dumps(
        {"monitor": "val_accuracy", "values": {"0": 0.5, "1": 0.8}}))
    resumed = KeepBestEpoch(str(folder), "val_accuracy", patience=2)
    other = constant_model()
    assert play(resumed, other, [0.5, 0.8, 0.6, 0.7, 0.4], resume_at=2) == [2, 3]
    assert kept_epoch(other) == 1
    assert resumed.summary()["values"] == [0.5, 0.8, 0.6, 0.7]
