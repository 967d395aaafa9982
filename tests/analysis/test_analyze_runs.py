"""`kdplug run` with `analysis:` and `kdplug analyze RUN_DIR ...` on toy runs."""

import json
import os
import shutil

import pytest
import yaml

from kdplug import storage
from kdplug import testing
from kdplug.analysis import load_run
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.run import Experiment
from kdplug.testing.toy_config import write_toy_config

# Every test reads the module's two toy runs (about 30 s on 2 busy cores).
pytestmark = pytest.mark.slow

PROBING = {"tasks": ["sentence_length", "bigram_shift"], "max_examples": 120,
           "seeds": [0, 1], "max_iter": 100, "batch_size": 32}


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
    """Two finished toy runs sharing one teacher: a `kd` BERT student (its
    config asks for the analysis at the end) and a BiLSTM student."""
    folder = tmp_path_factory.mktemp("analysis")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDPLUG_CACHE_DIR", str(folder / "cache"))
        return _train(folder)


@pytest.fixture(autouse=True)
def _toy_cache(toy_runs, monkeypatch):
    """The runs' teacher cache (conftest gives every test an empty one)."""
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(toy_runs["folder"] / "cache"))


def _train(folder):
    # One teacher preset: the second run loads the teacher the first one
    # fine-tuned (same preset, same data content, one cache).
    teacher = {"source": testing.write_tiny_preset(folder / "teacher", num_layers=2)}
    kd_config = write_toy_config(
        folder / "kd", {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        num_examples=200, teacher=teacher, export=False, name="toy-kd",
        training={"epochs": 1},
        student={"kind": "truncated", "layers": [1]},
        analysis={"probing": PROBING, "behaviour": {"top_n": 3}})
    kd = Experiment(load_config(kd_config)).run()
    lstm_config = write_toy_config(
        folder / "lstm", {"name": "bilstm", "alpha": 0.5}, num_examples=200,
        teacher=teacher, export=False, name="toy-lstm", training={"epochs": 1},
        student={"kind": "bilstm", "embedding_dim": 8, "lstm_units": 8,
                 "hidden_dim": 16})
    # A data path relative to the config file, as users write them: the
    # analysis finds it through the run's source.json.
    doc = yaml.safe_load(open(lstm_config, encoding="utf-8"))
    doc["data"]["path"] = "toy.tsv"
    with open(lstm_config, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f)
    lstm = Experiment(load_config(lstm_config)).run()
    return {"folder": folder, "kd": kd, "lstm": lstm,
            "kd_dir": os.path.join(folder, "kd", "runs", "toy-kd"),
            "lstm_dir": os.path.join(folder, "lstm", "runs", "toy-lstm")}


def read(run_dir, name="analysis.json"):
    with open(os.path.join(run_dir, "analysis", name), encoding="utf-8") as f:
        return json.load(f) if name.endswith(".json") else f.read()


def test_run_writes_analysis_consistent_with_its_report(toy_runs):
    result = read(toy_runs["kd_dir"])
    assert [m["name"] for m in result["models"]] == ["teacher", "student"]
    # Behaviour on the test split: the same accuracies the run reported.
    overlap = result["behaviour"]["student"]["error_overlap"]
    report = toy_runs["kd"]
    assert overlap["teacher_accuracy"] == pytest.approx(report["teacher"]["accuracy"])
    assert overlap["student_accuracy"] == pytest.approx(report["student"]["accuracy"])
    assert overlap["n"] == report["test_examples"]
    cells = [overlap[k] for k in ("both_right", "teacher_only", "student_only",
                                  "both_wrong")]
    assert sum(cells) == overlap["n"]
    assert len(result["behaviour"]["student"]["top_disagreements"]) == 3
    # Probing: every layer of both models, both poolings, two seeds each.
    probing = result["probing"]
    assert [t["name"] for t in probing["tasks"]] == ["sentence_length", "bigram_shift"]
    teacher = probing["results"]["teacher"]["sentence_length"]
    assert list(teacher) == ["embeddings", "layer 1", "layer 2"]
    student = probing["results"]["student"]["bigram_shift"]
    assert list(student) == ["embeddings", "layer 1"]
    for stats in student["layer 1"].values():
        assert len(stats["seeds"]) == 2 and 0 <= stats["test_accuracy"] <= 1
    # The probing sets are saved as SentEval files.
    for name in ("sentence_length", "bigram_shift"):
        path = os.path.join(toy_runs["kd_dir"], "analysis", "probing_sets", f"{name}.txt")
        with open(path, encoding="utf-8") as f:
            splits = {line.split("\t")[0] for line in f}
        assert splits <= {"tr", "va", "te"} and "tr" in splits
    files = set(os.listdir(os.path.join(toy_runs["kd_dir"], "analysis")))
    assert {"analysis.md", "analysis.json", "probing_cls.png", "probing_mean.png",
            "reliability_student.png"} <= files
    markdown = read(toy_runs["kd_dir"], "analysis.md")
    assert "## Behaviour: teacher vs student" in markdown
    assert "### Best layer per task" in markdown


def test_sentence_length_is_read_from_low_layers_above_chance(toy_runs):
    """The token count is in every position's position embedding: the
    mean-pooled embeddings predict the length bin well above the majority
    baseline."""
    result = read(toy_runs["kd_dir"])
    task = next(t for t in result["probing"]["tasks"] if t["name"] == "sentence_length")
    stats = result["probing"]["results"]["teacher"]["sentence_length"]["embeddings"]
    assert stats["mean"]["test_accuracy"] > task["majority_baseline"] + 0.2


def test_cli_analyzes_several_runs_and_compares_them(toy_runs, tmp_path, capsys):
    senteval = tmp_path / "word_good.txt"
    rows = []
    for i in range(60):  # label: does the sentence contain "good"?
        text = "good movie here" if i % 2 else "bad movie here"
        rows.append(f"{['tr', 'va', 'te'][0 if i < 40 else 1 if i < 48 else 2]}\t"
                    f"{'yes' if i % 2 else 'no'}\t{text}")
    senteval.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "comparison"
    code = main(["analyze", toy_runs["kd_dir"], toy_runs["lstm_dir"], "--output",
                 str(out), "--tasks", f"sentence_length,{senteval}", "--seeds", "0",
                 "--max-examples", "100"])
    assert code == 0
    printed = capsys.readouterr().out.split()
    assert printed[-1] == str(out / "analysis.md")
    comparison = json.loads((out / "analysis.json").read_text())
    names = [m["name"] for m in comparison["models"]]
    assert names == ["teacher", "toy-kd", "toy-lstm"]
    results = comparison["probing"]["results"]
    # The SentEval task is read as is: 40 / 8 / 12 examples.
    task = next(t for t in comparison["probing"]["tasks"] if t["name"] == "word_good")
    assert task["sizes"] == {"train": 40, "dev": 8, "test": 12}
    assert list(results["toy-lstm"]["word_good"]) == ["pooled"]
    assert results["teacher"]["word_good"]["layer 2"]["cls"]["test_accuracy"] >= 0.9
    assert set(comparison["behaviour"]) == {"toy-kd", "toy-lstm"}
    # The BiLSTM run's own folder got its analysis too (the CLI's settings:
    # one seed).
    lstm = read(toy_runs["lstm_dir"])
    assert lstm["config"]["probing"]["seeds"] == [0]
    # Each run's models are compiled as its training was (toy runs: no XLA).
    run = load_run(toy_runs["kd_dir"], read_data=False, with_teacher=False)
    assert run.config.training.jit_compile is False
    assert run.student_model().jit_compile is False


def test_cli_errors_name_the_folder_and_the_way_out(toy_runs, tmp_path, capsys):
    assert main(["analyze", str(tmp_path)]) == 2
    assert "no config.yaml" in capsys.readouterr().err
    assert main(["analyze", toy_runs["kd_dir"], "--probe", "svm"]) == 2
    err = capsys.readouterr().err
    assert "analysis.probing.probe" in err and "svm" in err
    # A run whose teacher is no longer in the cache.
    copy = tmp_path / "copy"
    shutil.copytree(toy_runs["kd_dir"], copy, ignore=shutil.ignore_patterns("analysis"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "empty-cache"))
        assert main(["analyze", str(copy), "--no-probing"]) == 2
    assert "kdplug finetune-teacher" in capsys.readouterr().err
    # A run with a relative data path and no record of the config it came
    # from: the error names the way out, and --config is that way.
    moved = tmp_path / "moved"
    shutil.copytree(toy_runs["lstm_dir"], moved, ignore=shutil.ignore_patterns("analysis"))
    storage.write_json(str(moved / "source.json"), {"config_file": None})
    assert main(["analyze", str(moved), "--no-probing"]) == 2
    assert "--config FILE" in capsys.readouterr().err
    original = os.path.join(toy_runs["folder"], "lstm", "toy.yaml")
    assert main(["analyze", str(moved), "--no-probing", "--config", original]) == 0
    assert "probing" not in read(str(moved))
