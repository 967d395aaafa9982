"""A student that learns from the first steps (issue #54): with the
shipped defaults, a PKD-Skip run on a checkpoint trained with mean pooling
(as the packaged MiniLM-L6 was) pools the mean, its hard loss leaves the
uniform guess early in the first epoch and it does not end at one class.
The real-model measurement is bench/escape.py (docs/results.md, 'Escaping
the majority class'); this is its toy counterpart."""

import json
import os

import keras
import pytest

from kdplug.cli import main
from kdplug.evaluation.collapse import escape_step
from kdplug.testing import write_tiny_preset
from kdplug.testing.toy_config import write_toy_config

pytestmark = pytest.mark.slow

LOG_EVERY = 3
# 336 training examples in batches of 16: 21 steps an epoch, 63 in all.
STEPS_PER_EPOCH = 21
EPOCHS = 3


def write_mean_pooled_checkpoint(folder):
    """A tiny preset carrying a sentence-transformers Pooling config that
    says it was trained with mean pooling."""
    preset = write_tiny_preset(folder)
    os.makedirs(os.path.join(preset, "1_Pooling"))
    with open(os.path.join(preset, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 16, "pooling_mode_cls_token": False,
                   "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False}, f)
    return preset


def pkd_skip_run(folder, **teacher):
    """A toy run of configs/pkd_skip.yaml's method and student (3 layers of
    6 there, 1 of 2 here); returns its report."""
    preset = write_mean_pooled_checkpoint(folder / "teacher")
    config = write_toy_config(
        folder, {"name": "pkd", "strategy": "skip", "alpha": 0.5, "beta": 100.0,
                 "temperature": 5.0, "soft_class_mean": True},
        num_examples=480,
        teacher={"source": str(preset), "finetune": {
            "epochs": 2, "batch_size": 16, "learning_rate": 3e-3}, **teacher},
        student={"kind": "truncated", "layers": "first_k", "num_layers": 1,
                 "init": "pretrained"},
        training={"epochs": EPOCHS}, export=False)
    assert main(["run", config, "--log-every", str(LOG_EVERY)]) == 0
    report = json.loads((folder / "runs" / "toy" / "metrics.json").read_text())
    steps = report["step_history"]["distill"]
    assert steps["step"][-1] - steps["step"][0] + LOG_EVERY == EPOCHS * STEPS_PER_EPOCH
    return report, escape_step(steps["step"], steps["hard_ce"], 2, window=LOG_EVERY)


def test_the_default_pooling_escapes_where_cls_stays_at_the_majority(tmp_path, monkeypatch):
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "cache"))
    # The default, `teacher.pooling: auto`, reads the checkpoint's: the mean.
    report, step = pkd_skip_run(tmp_path / "auto")
    assert step is not None and step <= 2 * STEPS_PER_EPOCH, step
    collapse = report["student"]["collapse"]
    assert not collapse["collapsed"] and report["student"]["accuracy"] > (
        collapse["label_share"] + 0.1)
    student = keras.saving.load_model(tmp_path / "auto" / "runs" / "toy" / "student.keras")
    assert student.pooling == "mean"
    # kdplug 0.2's default: [CLS] of a checkpoint trained for the mean; the
    # student never leaves the uniform guess, and the report says so.
    report, step = pkd_skip_run(tmp_path / "cls", pooling="cls")
    assert step is None
    assert report["student"]["collapse"]["collapsed"]
    assert any(c["plateau"] for c in report["checks"]["distill"]["collapse"])
