"""`kdplug run` killed mid-epoch (SIGKILL) resumes where it stopped.

The run writes a backup of the stage at the end of every epoch
(`kdplug.training.callbacks.ResumableBackup`). The test starts `kdplug run` as a
subprocess, kills it with SIGKILL in the middle of an epoch once a backup
exists, runs the same config again (in the test's process: what it resumes
from is on disk, and a second TensorFlow start-up costs ~10 s) and checks
that it resumes at the first unfinished epoch (not at epoch 1), takes
exactly the optimizer steps an uninterrupted run takes, and ends with its
metrics.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from kdplug.config import load_config
from kdplug.run.experiment import Experiment
from kdplug.training.callbacks import ResumableBackup
from kdplug.testing.toy_config import write_toy_config

EPOCHS = 4
TIMEOUT = 240  # seconds for one process


def write_config(tmp_path):
    """A tiny `kd` run: tiny random teacher (not fine-tuned), 4 epochs of
    ~1-3 s (560 toy sentences, batch 4), Keras' per-epoch log lines, no
    export."""
    return write_toy_config(
        tmp_path, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        num_examples=800, teacher={"finetune": None},
        student={"kind": "truncated", "layers": [1], "dropout": 0.0},
        training={"epochs": EPOCHS, "batch_size": 4, "learning_rate": 1e-3,
                  "verbose": 2},
        export=False)


def kdplug_run(config_path):
    return subprocess.Popen(
        [sys.executable, "-m", "kdplug.cli", "run", config_path],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )


def backed_up_epochs(backup_dir):
    return ResumableBackup(str(backup_dir)).backed_up_epochs()  # 0: none yet


def optimizer_steps(messages):
    (steps,) = re.findall(r"stage distill: done, (\d+) optimizer steps", messages)
    return int(steps)


@pytest.mark.slow
def test_killed_run_resumes_with_the_same_steps_and_metrics(tmp_path, kdplug_log, capsys):
    config_path = write_config(tmp_path)
    run_dir = tmp_path / "runs" / "toy"
    backup = run_dir / "backup" / "01-distill"
    finished = run_dir / "stages" / "01-distill.weights.h5"

    # 1. Start, wait for the end of the first epoch's backup, kill mid-epoch 2.
    process = kdplug_run(config_path)
    try:
        deadline = time.monotonic() + TIMEOUT
        while backed_up_epochs(backup) < 1:
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, "no backup written"
            time.sleep(0.05)
        time.sleep(0.3)  # into the next epoch (an epoch takes about a second)
        process.send_signal(signal.SIGKILL)
        first_output = process.communicate(timeout=30)[0]
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    assert not finished.exists(), "the stage finished before the kill"
    killed_after = backed_up_epochs(backup)
    assert 1 <= killed_after < EPOCHS
    assert f"Epoch {killed_after + 1}/{EPOCHS}" in first_output  # it was in that epoch

    # 2. The same config again: resumes at the first unfinished epoch.
    capsys.readouterr()
    report = Experiment(load_config(config_path)).run()
    output = "\n".join(kdplug_log() + [capsys.readouterr().out])  # Keras' epoch lines
    assert (f"stage distill: resumed from {backup} at epoch {killed_after + 1} "
            f"({killed_after} finished)") in output
    assert "Epoch 1/" not in output  # did not start over
    assert f"Epoch {killed_after + 1}/{EPOCHS}" in output
    assert not backup.exists()  # removed once the stage finished
    assert json.loads((run_dir / "metrics.json").read_text()) == json.loads(
        json.dumps(report))  # what the run returned is what it wrote
    # its time is this process's share of the stage, and says so
    assert report["resumed"] == {"stage distill": f"resumed after epoch {killed_after}"}
    assert (f"- stage distill: {report['seconds']['stage distill']:.0f} s (resumed after "
            f"epoch {killed_after}: this run's part only)") in (
        run_dir / "summary.md").read_text()
    resumed_history = report["history"]["distill"]
    # The history recorded before the kill is kept: every epoch is reported.
    assert len(resumed_history["loss"]) == EPOCHS
    steps = report["step_history"]["distill"]
    assert steps["epoch"] == sorted(steps["epoch"]) and set(steps["epoch"]) == set(
        range(EPOCHS))
    assert steps["step"] == sorted(steps["step"])

    # 3. An uninterrupted run of the same config.
    config = load_config(config_path)
    config.output_dir = str(tmp_path / "uninterrupted")
    resumed_messages = len(kdplug_log())
    expected = Experiment(config).run()
    messages = kdplug_log()[resumed_messages:]
    history = expected["history"]["distill"]
    assert expected["resumed"] == {}
    steps_per_epoch = 560 // 4  # 70% of 800 examples, batch 4
    assert optimizer_steps("\n".join(messages)) == EPOCHS * steps_per_epoch
    assert optimizer_steps(output) == EPOCHS * steps_per_epoch

    # The resumed epochs see the batches in another order (a new process
    # starts the dataset's reshuffling over), so the metrics are close, not
    # identical (measured: final losses within 3e-5 of each other).
    assert resumed_history["loss"][-1] == pytest.approx(history["loss"][-1], abs=0.01)
    assert resumed_history["val_loss"][-1] == pytest.approx(history["val_loss"][-1],
                                                            abs=0.01)
    assert report["student"]["accuracy"] == pytest.approx(
        expected["student"]["accuracy"], abs=0.05)
