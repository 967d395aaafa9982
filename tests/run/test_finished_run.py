"""One finished toy `kdplug run` (module fixture, through the CLI) read by
every test here: the run-level evaluation settings it was given and the
commands that read a finished run.

- `evaluation.metrics`: test-split metrics in metrics.json and summary.md,
  validation metrics each epoch in the history; `training.early_stopping` on
  one of them: the student and the teacher's fine-tuning keep their best
  epoch (`KeepBestEpoch`'s own tests: tests/training/test_keep_best_epoch.py).
- `kdplug predict`, `kdplug evaluate` and `kdplug export`, and their errors,
  checked against the run's own numbers: predict's probabilities are the
  student's softmax on the same encoded batch, evaluate's metrics on the
  test split are the run's `metrics.json`, and export's `.keras` gives the
  student's logits. Reading inputs without a run:
  tests/run/test_trained_run.py.

(One run for both: each is a toy run of about 30 s.)"""

import json
import os
import shutil

import keras
import numpy as np
import pytest
import yaml

from kdplug import load_model
from kdplug import storage
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.evaluation.export import FORMATS
from kdplug.run.trained_run import TrainedRun
from kdplug.testing.toy_config import write_toy_config
from kdplug.training.callbacks import KeepBestEpoch
from kdplug.training.callbacks import ResumableBackup

# Every test reads the module's toy run (about 14 s on 2 busy cores).
pytestmark = pytest.mark.slow

NAMES = ["neg", "pos"]
METRICS = ["accuracy", "f1_macro", "mcc"]
TEXTS = ["a fine film", "bad dull movie", "fine good great"]


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    """A finished toy `kd` run through the CLI: classes named neg / pos, a
    learning rate high enough to wobble, extra test/validation metrics, the
    student's early stopping on `val_f1_macro`, the teacher's fine-tuning
    keeping its best epoch (on `val_accuracy`, the default), a `keras`
    export; and its test split as a TSV of class names."""
    folder = tmp_path_factory.mktemp("trained-run")
    config = write_toy_config(
        folder, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        teacher={"finetune": {"epochs": 3, "batch_size": 16, "learning_rate": 3e-3,
                              "early_stopping": {"patience": 1}}},
        training={"epochs": 5, "early_stopping": {"monitor": "val_f1_macro",
                                                  "patience": 2}},
        data={"label_names": NAMES}, evaluation={"metrics": METRICS},
        student={"kind": "truncated", "layers": [1]},
        export={"formats": ["keras"], "latency_batch_sizes": [1]})
    epoch_ends = []  # (callback, stage, epoch, whether a backup was written)
    backups = {}  # stage -> its ResumableBackup
    stored = {}  # stage -> epochs in its backup when its result was stored

    def recorded(cls):
        real = cls.on_epoch_end

        def on_epoch_end(self, epoch, logs=None):
            real(self, epoch, logs)
            wrote = None
            if cls is ResumableBackup:
                wrote = self.backed_up_epochs() == epoch + 1
                backups[self.stage] = self
            epoch_ends.append((cls.__name__, self.stage, epoch, wrote))
        return on_epoch_end

    save_weights = storage.save_weights

    def store(model, path, **kwargs):
        stage = ("teacher fine-tuning" if path.endswith("model.weights.h5") else
                 "distill" if path.endswith("01-distill.weights.h5") else None)
        if stage in backups:
            stored[stage] = backups[stage].backed_up_epochs()
        return save_weights(model, path, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDPLUG_CACHE_DIR", str(folder / "cache"))
        for cls in (KeepBestEpoch, ResumableBackup):
            mp.setattr(cls, "on_epoch_end", recorded(cls))
        mp.setattr(storage, "save_weights", store)
        assert main(["run", config]) == 0
    run_dir = folder / "runs" / "toy"
    rows = [line.split("\t") for line in (folder / "toy.tsv").read_text().splitlines()]
    header, test = rows[0], [row for row in rows[1:] if row[1] == "test"]
    label, text = header.index("label"), header.index("text")
    test_file = folder / "test.tsv"
    test_file.write_text("text\tlabel\n" + "".join(
        f"{row[text]}\t{NAMES[int(row[label])]}\n" for row in test))
    return {"folder": folder, "config": config, "run_dir": run_dir,
            "test_file": str(test_file), "test_rows": len(test), "epoch_ends": epoch_ends,
            "stored": stored, "backups": backups,
            "report": json.loads((run_dir / "metrics.json").read_text())}


@pytest.fixture(autouse=True)
def _toy_cache(toy_run, monkeypatch):
    """The run's teacher cache (conftest gives every test an empty one)."""
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(toy_run["folder"] / "cache"))


def run_cli(args, capsys):
    """`(exit status, stdout, stderr)` of `kdplug ARGS` (a usage error's
    `SystemExit` too)."""
    try:
        status = main(args)
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def reference(toy_run):
    """The student reloaded here and its logits on the run's encoding of
    `TEXTS` (one batch)."""
    run = TrainedRun(str(toy_run["run_dir"]))
    features, _ = next(iter(run.dataset(run.examples(TEXTS))))
    student = load_model(os.path.join(str(toy_run["run_dir"]), "student.keras"))
    logits = keras.ops.convert_to_numpy(student(features, training=False))
    return {"features": features, "logits": logits}


def test_predict_prints_the_student_softmax_with_class_names(toy_run, reference,
                                                            capsys):
    args = ["predict", str(toy_run["run_dir"])]
    for text in TEXTS:
        args += ["--text", text]
    status, out, err = run_cli(args, capsys)
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    expected = keras.ops.convert_to_numpy(
        keras.ops.softmax(reference["logits"].astype("float64"), axis=-1))
    assert [r["text"] for r in records] == TEXTS
    for record, probabilities in zip(records, expected):
        assert list(record) == ["text", "label", "probabilities"]
        assert list(record["probabilities"]) == NAMES
        np.testing.assert_allclose(list(record["probabilities"].values()),
                                   probabilities, rtol=0, atol=1e-7)
        assert record["label"] == NAMES[int(np.argmax(probabilities))]


def test_predict_with_the_teacher_from_a_file_to_a_file(toy_run, capsys, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    output = tmp_path / "predictions.jsonl"
    status, out, err = run_cli(["predict", str(toy_run["run_dir"]), "--input", str(texts),
                                "--model", "teacher", "--output", str(output),
                                "--batch-size", "2"], capsys)
    assert status == 0, err
    assert out == "" and f"3 prediction(s): {output}" in err
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [r["text"] for r in records] == TEXTS
    for record in records:
        probabilities = record["probabilities"]
        assert sum(probabilities.values()) == pytest.approx(1.0)
        assert record["label"] == max(probabilities, key=probabilities.get)


def test_evaluate_both_models_gives_the_run_test_accuracy(toy_run, capsys, tmp_path):
    output = tmp_path / "metrics.json"
    status, out, err = run_cli(["evaluate", str(toy_run["run_dir"]), "--data",
                                toy_run["test_file"], "--model", "both",
                                "--output", str(output)], capsys)
    assert status == 0, err
    report = toy_run["report"]
    written = json.loads(output.read_text())
    assert written["examples"] == toy_run["test_rows"] == report["test_examples"]
    for role in ("student", "teacher"):
        assert list(written[role]) == METRICS
        assert written[role] == pytest.approx(report[role]["metrics"], abs=1e-6)
    lines = out.splitlines()
    assert lines[0] == f"toy: {toy_run['test_file']} ({toy_run['test_rows']} examples)"
    assert lines[1].split() == ["metric", "student", "teacher"]
    assert lines[-1] == f"metrics: {output}"
    for line, name in zip(lines[2:], METRICS):
        assert line.split() == [name, *(f"{report[role]['metrics'][name]:.4f}"
                                        for role in ("student", "teacher"))]
    # --split test: the run's own test split, read as the run read it
    status, out, err = run_cli(["evaluate", str(toy_run["run_dir"]), "--split", "test",
                                "--output", str(output)], capsys)
    assert status == 0, err
    assert out.splitlines()[0] == f"toy: its test split ({toy_run['test_rows']} examples)"
    written = json.loads(output.read_text())
    assert written["split"] == "test" and "data" not in written
    assert written["student"] == pytest.approx(report["student"]["metrics"], abs=1e-6)
    status, _, err = run_cli(["evaluate", str(toy_run["run_dir"])], capsys)
    assert status == 2 and "one of the arguments --data --split is required" in err


def test_evaluate_unknown_class_names_the_file_row_and_value(toy_run, capsys, tmp_path):
    data = tmp_path / "bad.tsv"
    data.write_text("text\tlabel\na fine film\tpos\nso so\tmaybe\n")
    status, _, err = run_cli(["evaluate", str(toy_run["run_dir"]), "--data", str(data)],
                             capsys)
    assert status == 2
    assert (f"kdplug: error: {data}:3: label 'maybe' in column 'label' is not a known "
            "class name") in err
    assert "known: neg, pos (the classes of run 'toy')" in err


def test_export_writes_a_loadable_keras_and_labels_once(toy_run, reference, capsys,
                                                       tmp_path):
    run_dir = str(toy_run["run_dir"])
    out_dir = tmp_path / "exported"
    status, out, err = run_cli(["export", run_dir, "--format", "keras",
                                "--output", str(out_dir)], capsys)
    assert status == 0, err
    exported = out_dir / "student.keras"
    assert f"keras: {exported}" in out and f"labels: {out_dir / 'labels.json'}" in out
    labels = json.loads((out_dir / "labels.json").read_text())
    assert labels["names"] == NAMES and labels["ids"] == {"neg": 0, "pos": 1}
    logits = load_model(str(exported))(reference["features"], training=False)
    np.testing.assert_allclose(logits, reference["logits"], rtol=0, atol=1e-6)
    # nothing twice: the run's export folder already has the .keras
    status, out, err = run_cli(["export", run_dir, "--format", "keras",
                                "--format", "keras"], capsys)
    assert status == 0, err
    assert out.splitlines()[0] == (
        f"keras: {os.path.join(run_dir, 'export', 'student.keras')} "
        "(already there, kept)")
    status, _, err = run_cli(["export", run_dir, "--format", "tflite"], capsys)
    assert status == 2
    assert "kdplug: error: --format: unknown export format 'tflite'" in err
    assert f"known: {', '.join(FORMATS)}" in err  # whatever the exporter knows


def test_bad_inputs_are_one_line_errors(toy_run, capsys, tmp_path):
    run_dir = str(toy_run["run_dir"])
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run_dir, unfinished, ignore=shutil.ignore_patterns(
        "student.keras", "tensorboard"))
    untuned = tmp_path / "untuned"
    shutil.copytree(run_dir, untuned, ignore=shutil.ignore_patterns("tensorboard"))
    config = yaml.safe_load((untuned / "config.yaml").read_text())
    config["teacher"]["finetune"] = None
    (untuned / "config.yaml").write_text(yaml.safe_dump(config))
    cases = {
        ("predict", str(tmp_path / "nope"), "--text", "x"): "no such run folder",
        ("predict", str(unfinished), "--text", "x"): "no student.keras",
        ("evaluate", str(unfinished), "--data", "x.tsv"): "must finish first",
        ("predict", run_dir, "--text", "x", "--model", "both"):
            "argument --model: invalid choice: 'both'",
        ("predict", str(untuned), "--text", "x", "--model", "teacher"):
            "did not fine-tune its teacher",
        ("evaluate", str(untuned), "--data", "x.tsv", "--model", "both"):
            "did not fine-tune its teacher",
        ("predict", run_dir, "--text", "x", "--text", " "): "--text #2: empty text",
        ("predict", run_dir, "--text", "x", "--pair", "y"):
            "--pair: run 'toy' reads single texts",
        ("predict", run_dir, "--input", str(tmp_path / "none.txt")):
            "none.txt: no such file (--input)",
        ("evaluate", run_dir, "--data", str(tmp_path / "none.tsv")):
            "none.tsv: no such file (--data)",
        ("export", str(unfinished), "--format", "keras"): "no student.keras",
    }
    for args, message in cases.items():
        status, out, err = run_cli(list(args), capsys)
        assert status == 2, (args, out, err)
        assert "kdplug: error: " in err and message in err, (args, err)
        assert err.strip().splitlines()[-1].startswith("kdplug: error: "), err


# ------------------------------------------------- metrics and early stopping
def test_run_reports_configured_metrics_and_stops_on_val_f1(toy_run):
    run_dir = toy_run["run_dir"]
    report = toy_run["report"]
    for role in ("teacher", "student"):
        metrics = report[role]["metrics"]
        assert list(metrics) == ["accuracy", "f1_macro", "mcc"]
        assert metrics["accuracy"] == report[role]["accuracy"]
        assert 0.0 <= metrics["f1_macro"] <= 1.0 and -1.0 <= metrics["mcc"] <= 1.0
    summary = (run_dir / "summary.md").read_text()
    assert "| model | test accuracy | test f1_macro | test mcc | parameters |" in summary
    # the toy config's `evaluation.latency_runs`
    assert report["latency_runs"] == 2 and "median of 2 runs" in summary
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


def test_early_stopping_keeps_the_best_epoch_and_reports_it(toy_run):
    """The saved student is the best epoch's (its validation accuracy is
    that epoch's), which the summary names; the teacher's fine-tuning keeps
    its best epoch too."""
    import keras_hub  # noqa: F401  (registers the preset classes)

    from kdplug.data import read_splits
    from kdplug.evaluation.measure import accuracy
    from kdplug.run import RunContext
    from kdplug.run import TeacherSetup

    run_dir = toy_run["run_dir"]
    report = toy_run["report"]
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
    config = load_config(toy_run["config"])
    student = keras.saving.load_model(run_dir / "student.keras")
    context = RunContext.create(config)
    splits = read_splits(config.data, config.resolve_path, seed=config.seed)
    teacher, tokenizer, _ = TeacherSetup(context).load(config.data.num_classes)
    val_ds = TeacherSetup(context).encoder(tokenizer).dataset(splits["validation"], 64)
    # without XLA, as the toy run (`training.jit_compile: false`) measured it
    assert accuracy(student, val_ds, jit_compile=False) == pytest.approx(
        history["val_accuracy"][best["best_epoch"] - 1], abs=1e-6)
    teacher_best = report["teacher"]["finetune"]["early_stopping"]
    assert 1 <= teacher_best["best_epoch"] <= teacher_best["epochs_run"] <= 3
    assert report["teacher"]["finetune"]["validation_accuracy"] == pytest.approx(
        teacher_best["best_value"], abs=1e-6)
    assert not (run_dir / "backup" / "01-distill.best").exists()
    assert storage.read_json(str(run_dir / "stages" /
                                 "01-distill.history.json"))["best"] == best


def test_early_stopping_state_is_written_before_each_backup(toy_run):
    """At every epoch's end the early-stopping state is written before the
    backup (a kill in between resumes with that epoch's record), the
    epoch a stage ends with writes no backup, and the backup before it
    stays until the stage's result is stored (a kill before that resumes
    at the last epoch), then goes: the teacher's fine-tuning and the
    student's stage alike."""
    report = toy_run["report"]
    epochs_run = {
        "teacher fine-tuning": report["teacher"]["finetune"]["early_stopping"]["epochs_run"],
        "distill": report["early_stopping"]["distill"]["epochs_run"],
    }
    for stage, epochs in epochs_run.items():
        expected = []
        for epoch in range(epochs):
            expected += [("KeepBestEpoch", epoch, None),
                         ("ResumableBackup", epoch, epoch + 1 < epochs)]
        got = [(name, epoch, wrote) for name, where, epoch, wrote in toy_run["epoch_ends"]
               if where == stage]
        assert got == expected, stage
        assert toy_run["stored"][stage] == epochs - 1, stage
        assert not os.path.exists(toy_run["backups"][stage].backup_dir), stage
