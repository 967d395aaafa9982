"""A run folder is used by one run at a time and never describes training
that did not happen: stale stages are refused, identical re-runs keep their
history, `--fresh` moves the old run aside."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from kdplug.cli import main
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.run.run_folder import RunFolder
from kdplug.run.run_folder import changed_fields
from kdplug.testing.toy_config import write_toy_config


def test_changed_fields_by_hand():
    old = {"training": {"learning_rate": 1e-4, "epochs": 2}, "seed": 0,
           "method": {"name": "kd", "alpha": 0.5}}
    new = {"training": {"learning_rate": 1e-3, "epochs": 2}, "seed": 0,
           "method": {"name": "pkd"}, "augment": []}
    assert changed_fields(old, new) == [
        "augment: (not set) -> []",
        "method.alpha: 0.5 -> (not set)",
        "method.name: 'kd' -> 'pkd'",
        "training.learning_rate: 0.0001 -> 0.001",
    ]
    assert changed_fields(old, old) == []


def test_check_refuses_stages_from_other_or_unknown_settings(tmp_path):
    folder = RunFolder(tmp_path / "run")
    settings = {"training": {"learning_rate": 1e-4}}
    folder.check(settings)  # nothing there yet
    (tmp_path / "run" / "stages").mkdir(parents=True)
    (tmp_path / "run" / "stages" / "01-distill.weights.h5").write_bytes(b"x")
    with pytest.raises(ConfigError, match="no record of the settings") as e:
        folder.check(settings, "x.yaml")
    assert e.value.field == "output_dir" and "--fresh" in str(e.value)
    folder.record(settings)
    folder.check(settings)  # the same settings: fine
    with pytest.raises(ConfigError) as e:
        folder.check({"training": {"learning_rate": 1e-3}}, "x.yaml")
    text = str(e.value)
    assert text.startswith("x.yaml: output_dir: ")
    assert "training.learning_rate: 0.0001 -> 0.001" in text
    assert "kdplug run --fresh" in text and "set output_dir" in text


def test_a_second_process_is_told_who_holds_the_folder(tmp_path):
    path = str(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom kdplug.run.run_folder import RunFolder\n"
         "with RunFolder(sys.argv[1]).lock():\n"
         "    print('locked', flush=True)\n    time.sleep(60)\n", path],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(KdplugError, match=f"in use by another kdplug run "
                                              f"\\(process {holder.pid}, started"):
            with RunFolder(path).lock():
                pass
    finally:
        holder.kill()
        holder.wait()
    with RunFolder(path).lock():  # released by the OS when the holder died
        pass


def test_a_folder_that_cannot_be_made_is_an_error_naming_output_dir(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(KdplugError, match=r"cannot create the run folder .*file/run "
                                          r"\(Not a directory\); set output_dir"):
        with RunFolder(tmp_path / "file" / "run").lock():
            pass


def test_move_aside_keeps_the_old_folder(tmp_path):
    folder = RunFolder(tmp_path / "run")
    assert folder.move_aside() is None
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.json").write_text("{}")
    folder.record({"seed": 0})  # a kdplug run folder: --fresh moves only those
    moved = folder.move_aside()
    assert os.path.basename(moved).startswith("run.old-")
    assert (tmp_path / os.path.basename(moved) / "metrics.json").read_text() == "{}"
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_stale_rerun_is_refused_identical_rerun_keeps_history_fresh_starts_over(
        tmp_path, capsys):
    path = write_toy_config(
        tmp_path, {"name": "kd"}, num_examples=64, teacher={"finetune": None},
        student={"kind": "truncated", "layers": [1]},
        training={"epochs": 2, "batch_size": 8, "verbose": "auto"}, export=False)
    run_dir = tmp_path / "runs" / "toy"
    assert main(["run", path, "--log-every", "2"]) == 0
    first = json.loads((run_dir / "metrics.json").read_text())
    # One copy of the student: the finished stage's weights are student.keras.
    assert not (run_dir / "stages" / "01-distill.weights.h5").exists()
    assert json.loads((run_dir / "stages" / "01-distill.weights.json").read_text()
                      )["file"] == "student.keras"
    weights = (run_dir / "student.keras").read_bytes()
    assert len(first["history"]["distill"]["loss"]) == 2
    # 44 training examples, batch 8: 6 steps per epoch, a record every 2
    steps = first["step_history"]["distill"]
    assert steps["step"] == [2, 4, 6, 8, 10, 12] and steps["epoch"] == [0] * 3 + [1] * 3
    assert len(steps["loss"]) == 6 and len(steps["soft_ce"]) == 6
    assert list((run_dir / "tensorboard" / "01-distill" / "steps").glob("events.*"))
    err = capsys.readouterr().err
    assert "\r" not in err  # no progress bar redraws off a terminal
    assert "kdplug: stage distill: epoch 2/2 done in " in err
    assert "kdplug: stage distill: done, 12 optimizer steps" in err

    assert not (run_dir / "backup" / "01-distill").exists()  # gone once stored
    # An identical re-run reuses the stage and reports its recorded history
    # (and removes a backup that a kill right after storing it would leave).
    (run_dir / "backup" / "01-distill").mkdir(parents=True)
    assert main(["run", path, "--log-every", "2"]) == 0
    assert not (run_dir / "backup" / "01-distill").exists()
    again = json.loads((run_dir / "metrics.json").read_text())
    assert again["history"] == first["history"]
    assert again["step_history"] == first["step_history"]
    assert again["student"]["accuracy"] == first["student"]["accuracy"]
    weights = (run_dir / "student.keras").read_bytes()  # saved again (its zip dates)
    assert (run_dir / "loss_curves.png").stat().st_size > 1000
    capsys.readouterr()

    # Changed settings: refused before any training; nothing in the folder changes.
    doc = yaml.safe_load(open(path))
    doc["training"]["learning_rate"] = 1e-2
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    config_before = (run_dir / "config.yaml").read_text()
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    assert "training.learning_rate: 0.003 -> 0.01" in err and "--fresh" in err
    assert "Traceback" not in err
    assert (run_dir / "config.yaml").read_text() == config_before
    assert (run_dir / "student.keras").read_bytes() == weights

    # --fresh moves the old run aside and trains with the new settings.
    assert main(["run", path, "--fresh"]) == 0
    old = [p for p in os.listdir(tmp_path / "runs") if p.startswith("toy.old-")]
    assert len(old) == 1
    assert (tmp_path / "runs" / old[0] / "student.keras").read_bytes() == weights
    assert (run_dir / "student.keras").read_bytes() != weights
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["training"]["learning_rate"] == 1e-2
