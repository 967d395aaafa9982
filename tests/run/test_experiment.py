import json

import keras
import numpy as np
import pytest
import yaml

from kdplug import ConfigError
from kdplug import testing
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.run.experiment import Experiment
from kdplug.run.trained_run import TrainedRun
from kdplug.teacher import TeacherCache


def write_config(tmp_path, **overrides):
    preset = testing.write_tiny_preset(tmp_path / "teacher", num_layers=2)
    data = testing.write_toy_tsv(tmp_path / "toy.tsv", num_examples=320)
    doc = {
        "name": "toy",
        "output_dir": str(tmp_path / "runs" / "{name}"),
        "data": {"path": data, "sequence_length": 16},
        "teacher": {"source": preset, "finetune": {"epochs": 4, "batch_size": 16,
                                                   "learning_rate": 3e-3}},
        "method": {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        "student": {"kind": "truncated", "layers": [1]},
        "training": {"epochs": 3, "batch_size": 16, "learning_rate": 3e-3,
                     "jit_compile": False, "verbose": 0},
    }
    for key, value in overrides.items():
        doc.setdefault(key, {}).update(value)
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.slow
def test_run_end_to_end_writes_report_and_exports(tmp_path):
    config_path = write_config(tmp_path, export={"formats": [
        "keras", "tflite_float32", "tflite_int8"]})
    report = Experiment(load_config(config_path)).run()
    run_dir = tmp_path / "runs" / "toy"
    for name in ("config.yaml", "metrics.json", "summary.md", "student.keras"):
        assert (run_dir / name).is_file(), name
    teacher, student = report["teacher"], report["student"]
    assert teacher["accuracy"] >= 0.65  # the toy task is learnable
    assert student["accuracy"] >= teacher["accuracy"] - 0.15
    assert student["params"] < teacher["params"]
    assert student["latency_ms"]["median"] > 0
    assert report["history"]["distill"]["loss"][-1] < report["history"]["distill"]["loss"][0]
    assert json.loads((run_dir / "metrics.json").read_text())["student"]["accuracy"] == \
        pytest.approx(student["accuracy"])
    with np.load(run_dir / "predictions.npz") as saved:  # the test split's outputs
        for role in ("teacher", "student"):
            assert saved[role].shape == (len(saved["labels"]), 2)
            hits = np.argmax(saved[role], -1) == saved["labels"]
            assert hits.mean() == pytest.approx(report[role]["accuracy"])
    summary = (run_dir / "summary.md").read_text()
    assert "| teacher |" in summary and "| student |" in summary
    assert "| tflite_int8 |" in summary and "loss_curves.png" in summary
    assert report["latency_runs"] == 30 and "median of 30 runs" in summary  # the default
    export = report["export"]
    assert (run_dir / "export" / "student_int8.tflite").is_file()
    # dynamic-range int8 only quantises tensors of >= 1024 weights: none here
    assert export["size_bytes"]["tflite_int8"] <= export["size_bytes"]["tflite_float32"]
    assert export["accuracy"]["tflite_float32"] == pytest.approx(student["accuracy"], abs=0.02)
    assert export["latency_ms"]["tflite_int8"]["batch_1"]["median"] > 0
    for name in ("loss_curves.png", "teacher_vs_student.png"):
        assert (run_dir / name).stat().st_size > 1000
    assert any((run_dir / "tensorboard").rglob("*.v2"))

    saved = keras.saving.load_model(str(run_dir / "student.keras"))
    x, _ = testing.toy_batch(4, vocabulary_size=20)
    assert saved.predict(x, verbose=0).shape == (4, 2)

    # A re-run (the stage reused, its history reported): tests/run/
    # test_run_folder.py; the cached fine-tuned teacher: tests/teacher/test_finetune.py.


def test_sequence_length_above_teacher_maximum(tmp_path):
    config_path = write_config(tmp_path, data={"sequence_length": 64})
    with pytest.raises(ConfigError, match="data.sequence_length.*maximum sequence length 32"):
        Experiment(load_config(config_path)).run()


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    config_path = write_config(tmp_path, method={"temprature": 1.0})
    assert main(["validate", config_path]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kdplug: error: ")
    assert "method.temprature" in err and "Traceback" not in err
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2


def test_cli_validate_and_plugins(tmp_path, capsys):
    assert main(["validate", write_config(tmp_path)]) == 0
    assert "OK" in capsys.readouterr().out
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "kd" in out and "method:kd" in out and "student:truncated" in out


@pytest.mark.slow
def test_run_with_augmented_transfer_set_and_teacher_output_cache(tmp_path, monkeypatch):
    made = []  # the teacher's forward pass follows training.jit_compile
    init = TeacherCache.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self.jit_compile)

    monkeypatch.setattr(TeacherCache, "__init__", spy)
    config_path = write_config(
        tmp_path,
        teacher={"finetune": {"epochs": 2, "batch_size": 16, "learning_rate": 3e-3}},
        training={"epochs": 1},
    )
    doc = yaml.safe_load(open(config_path))
    doc["augment"] = [{"name": "mask", "n": 2, "p_mask": 0.3}]
    doc["cache"] = {"dtype": "float32"}
    doc["export"] = False
    with open(config_path, "w") as f:
        yaml.safe_dump(doc, f)
    report = Experiment(load_config(config_path)).run()
    transfer = report["transfer_set"]
    assert transfer["original"] == 224
    assert transfer["original"] < transfer["total"] <= 3 * transfer["original"]
    info = report["teacher_output_cache"]
    assert info["cached"] is False and info["bytes"] > 0
    assert made == [False]  # the toy config's `jit_compile: false`
    assert np.isfinite(report["history"]["distill"]["loss"]).all()

    # A second run (new output folder) reuses the cached transfer set and outputs.
    doc["output_dir"] = str(tmp_path / "runs2" / "{name}")
    with open(config_path, "w") as f:
        yaml.safe_dump(doc, f)
    again = Experiment(load_config(config_path)).run()
    assert again["teacher_output_cache"]["cached"] is True
    assert again["teacher_output_cache"]["key"] == info["key"]
    assert again["transfer_set"] == transfer
    # The warm teacher cache gives the same student as the cold one: the
    # student's draws follow the run's seed, not what fine-tuning consumed.
    assert again["teacher"]["finetune"]["cached"] is True
    assert report["teacher"]["finetune"]["cached"] is False
    assert again["history"] == report["history"]
    assert again["student"]["accuracy"] == report["student"]["accuracy"]


@pytest.mark.slow
def test_run_bilstm_student_on_its_own_word_ids(tmp_path):
    config_path = write_config(tmp_path, training={"epochs": 2})
    doc = yaml.safe_load(open(config_path))
    del doc["teacher"]["finetune"]  # a classifier used as it is
    doc["teacher"]["source"] = testing.write_tiny_preset(tmp_path / "classifier",
                                                         classifier=True)
    doc["method"] = {"name": "bilstm", "alpha": 0.5}
    doc["export"] = False
    doc["student"] = {"kind": "bilstm", "input": "word_ids", "vocabulary_size": 64,
                      "embedding_dim": 8, "lstm_units": 8, "hidden_dim": 8}
    with open(config_path, "w") as f:
        yaml.safe_dump(doc, f)
    report = Experiment(load_config(config_path)).run()
    run_dir = tmp_path / "runs" / "toy"
    assert (run_dir / "word_vocabulary.json").is_file()
    history = report["history"]["distill"]
    assert history["loss"][-1] < history["loss"][0]
    assert report["student"]["params"] < report["teacher"]["params"]
    saved = keras.saving.load_model(str(run_dir / "student.keras"))
    assert saved.input_keys[0] == "word_ids"
    # The finished run predicts from the student's own encoding alone (the
    # teacher's tokenizer does not run); both models' inputs for both roles.
    run = TrainedRun(str(run_dir))
    texts = ["good fine film", "bad dull plot"]
    alone, _ = next(iter(run.dataset(run.examples(texts), roles=["student"])))
    assert sorted(alone) == ["word_ids", "word_padding_mask"]
    with_teacher = TrainedRun(str(run_dir), roles=("teacher", "student"))
    both, _ = next(iter(with_teacher.dataset(with_teacher.examples(texts))))
    assert {"token_ids", "padding_mask", "word_ids"} <= set(both)
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(saved(alone)))
    predicted = run.predict(texts)
    np.testing.assert_allclose([[p["probabilities"][k] for k in sorted(p["probabilities"])]
                                for p in predicted], expected, atol=1e-6)
