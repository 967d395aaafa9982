"""`evaluation.metrics` end to end: test-split metrics in metrics.json and
summary.md, validation metrics each epoch in the history, and early stopping
on one of them: the student and the teacher's fine-tuning keep their best
epoch (`KeepBestEpoch`'s own tests: tests/training/test_keep_best_epoch.py).

Both tests check one toy `kdplug run` (module fixture)."""

import json

import keras
import pytest

from kdplug import storage
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.testing.toy_config import write_toy_config


@pytest.fixture(scope="module")
def early_stopping_run(tmp_path_factory):
    """A toy `kd` run through the CLI with a learning rate high enough to
    wobble, extra test/validation metrics, the student's early stopping on
    `val_f1_macro` and the teacher's fine-tuning keeping its best epoch
    (on `val_accuracy`, the default)."""
    folder = tmp_path_factory.mktemp("early-stopping")
    config = write_toy_config(
        folder, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        teacher={"finetune": {"epochs": 3, "batch_size": 16, "learning_rate": 3e-3,
                              "early_stopping": {"patience": 1}}},
        training={"epochs": 5, "early_stopping": {"monitor": "val_f1_macro",
                                                  "patience": 2}},
        evaluation={"metrics": ["accuracy", "f1_macro", "mcc"]},
        student={"kind": "truncated", "layers": [1]}, export=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDPLUG_CACHE_DIR", str(folder / "cache"))
        assert main(["run", config]) == 0
    run_dir = folder / "runs" / "toy"
    return {"config": config, "run_dir": run_dir,
            "report": json.loads((run_dir / "metrics.json").read_text())}


def test_run_reports_configured_metrics_and_stops_on_val_f1(early_stopping_run):
    run_dir = early_stopping_run["run_dir"]
    report = early_stopping_run["report"]
    for role in ("teacher", "student"):
        metrics = report[role]["metrics"]
        assert list(metrics) == ["accuracy", "f1_macro", "mcc"]
        assert metrics["accuracy"] == report[role]["accuracy"]
        assert 0.0 <= metrics["f1_macro"] <= 1.0 and -1.0 <= metrics["mcc"] <= 1.0
    summary = (run_dir / "summary.md").read_text()
    assert "| model | test accuracy | test f1_macro | test mcc | parameters |" in summary
    s = report["student"]["metrics"]
    assert f"| student | {s['accuracy']:.4f} | {s['f1_macro']:.4f} | {s['mcc']:.4f} |" \
        in summary
    (history_file,) = (run_dir / "stages").glob("*.history.json")
    history = json.loads(history_file.read_text())
    epochs = history["epochs"]
    assert {"val_accuracy", "val_f1_macro", "val_mcc"} <= set(epochs)
    assert len(epochs["val_f1_macro"]) == len(epochs["loss"])
    assert history["best"]["monitor"] == "val_f1_macro"
    assert history["best"]["best_value"] == max(epochs["val_f1_macro"])


@pytest.mark.slow
def test_early_stopping_run_keeps_the_best_epoch_and_reports_it(early_stopping_run):
    """The saved student is the best epoch's (its validation accuracy is
    that epoch's), which the summary names; the teacher's fine-tuning keeps
    its best epoch too."""
    import keras_hub  # noqa: F401  (registers the preset classes)

    from kdplug.data import read_splits
    from kdplug.evaluation.measure import accuracy
    from kdplug.run import RunContext
    from kdplug.run import TeacherSetup

    run_dir = early_stopping_run["run_dir"]
    report = early_stopping_run["report"]
    best = report["early_stopping"]["distill"]
    history = report["history"]["distill"]
    values = history["val_f1_macro"]
    assert best["monitor"] == "val_f1_macro"
    assert best["values"] == pytest.approx(values)
    assert best["best_value"] == pytest.approx(max(values))
    assert values.index(max(values)) + 1 == best["best_epoch"]
    assert best["epochs_run"] == len(values) == len(history["val_accuracy"]) <= 5
    summary = (run_dir / "summary.md").read_text()
    assert f"kept epoch {best['best_epoch']} of {best['epochs_run']}" in summary
    # the saved student is the best epoch's: that epoch's validation accuracy
    config = load_config(early_stopping_run["config"])
    student = keras.saving.load_model(run_dir / "student.keras")
    context = RunContext.create(config)
    splits = read_splits(config.data, config.resolve_path, seed=config.seed)
    teacher, tokenizer, _ = TeacherSetup(context).load(config.data.num_classes)
    val_ds = TeacherSetup(context).encoder(tokenizer).dataset(splits["validation"], 64)
    assert accuracy(student, val_ds) == pytest.approx(
        history["val_accuracy"][best["best_epoch"] - 1], abs=1e-6)
    teacher_best = report["teacher"]["finetune"]["early_stopping"]
    assert 1 <= teacher_best["best_epoch"] <= teacher_best["epochs_run"] <= 3
    assert report["teacher"]["finetune"]["validation_accuracy"] == pytest.approx(
        teacher_best["best_value"], abs=1e-6)
    assert not (run_dir / "backup" / "01-distill.best").exists()
    assert storage.read_json(str(run_dir / "stages" /
                                 "01-distill.history.json"))["best"] == best
