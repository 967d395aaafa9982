"""`data.task` end to end: a regression and a multi-label run train the
teacher with their own objective, distil with the task's terms, report the
task's metrics and export a student measured with them."""

import json

import pytest
from conftest import run_toy_config as run

from kdplug.testing.toy_config import write_toy_config
from kdplug.testing.toy_tasks import write_toy_multi_label_jsonl
from kdplug.testing.toy_tasks import write_toy_tokens_jsonl

EXPORT = {"formats": ["keras"], "latency_batch_sizes": [1]}


@pytest.mark.slow
def test_regression_run_on_the_score_column(tmp_path):
    config = write_toy_config(
        tmp_path, {"name": "kd", "alpha": 0.5}, num_examples=120,
        student={"kind": "truncated", "layers": [1]},
        data={"task": "regression", "label_column": "score"},
        teacher={"finetune": {"epochs": 2, "batch_size": 16, "learning_rate": 3e-3}},
        training={"epochs": 2, "early_stopping": {"monitor": "val_pearson",
                                                  "patience": None}},
        export=EXPORT)
    report, history, summary = run(config)
    assert report["task"] == "regression" and report["primary_metric"] == "pearson"
    for role in ("teacher", "student"):
        assert list(report[role]["metrics"]) == ["pearson", "spearman", "mse"]
        assert report[role]["pearson"] == report[role]["metrics"]["pearson"]
    # the teacher learned the +-1 target from the text (MSE objective)
    assert report["teacher"]["pearson"] > 0.5
    assert report["teacher"]["finetune"]["validation"]["pearson"] > 0.3
    epochs = history["epochs"]
    assert {"soft_mse", "hard_mse", "val_pearson", "val_spearman"} <= set(epochs)
    assert epochs["hard_mse"][-1] < epochs["hard_mse"][0]
    assert history["best"]["best_value"] == pytest.approx(max(epochs["val_pearson"]))
    assert report["export"]["pearson"]["keras"] == pytest.approx(
        report["student"]["pearson"], abs=1e-3)
    assert "| model | test pearson | test spearman | test mse |" in summary
    assert "Student / teacher: pearson" in summary


@pytest.mark.slow
def test_multi_label_run_with_an_intermediate_layer_method(tmp_path):
    data = write_toy_multi_label_jsonl(tmp_path / "toy.jsonl", 160)
    config = write_toy_config(
        tmp_path, {"name": "pkd", "strategy": "last", "beta": 10.0},
        student={"kind": "truncated", "layers": "first_k", "num_layers": 1},
        data={"path": data, "task": "multi_label", "label_column": "labels"},
        teacher={"finetune": {"epochs": 3, "batch_size": 16, "learning_rate": 3e-3}},
        training={"epochs": 3}, export=EXPORT,
        evaluation={"metrics": ["f1_micro", "exact_match"]})
    report, history, summary = run(config)
    assert report["labels"]["names"] == ["neg", "pos"]
    assert list(report["student"]["metrics"]) == ["f1_micro", "exact_match"]
    # whether a sentence holds a positive / a negative word: learnable
    assert report["teacher"]["f1_micro"] > 0.75
    assert report["student"]["f1_micro"] > 0.6
    epochs = history["epochs"]
    assert {"soft_bce", "hard_bce", "val_f1_micro", "val_exact_match"} <= set(epochs)
    assert epochs["loss"][-1] < epochs["loss"][0]
    assert report["export"]["f1_micro"]["keras"] == pytest.approx(
        report["student"]["f1_micro"], abs=1e-6)
    assert "| model | test f1_micro | test exact_match |" in summary


@pytest.mark.slow
def test_token_classification_run_tags_every_word(tmp_path):
    data = write_toy_tokens_jsonl(tmp_path / "tokens.jsonl", 160)
    config = write_toy_config(
        tmp_path, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        student={"kind": "truncated", "layers": [1]},
        data={"path": data, "task": "token_classification", "text_column": "words",
              "label_column": "tags", "num_classes": 5},
        teacher={"finetune": {"epochs": 3, "batch_size": 16, "learning_rate": 3e-3}},
        training={"epochs": 2, "early_stopping": {"monitor": "val_entity_f1"}},
        cache={"teacher_outputs": True}, export=EXPORT)
    report, history, summary = run(config)
    assert report["labels"]["names"] == ["B-NEG", "B-POS", "I-NEG", "I-POS", "O"]
    assert list(report["student"]["metrics"]) == ["entity_f1", "token_accuracy"]
    assert report["teacher_output_cache"]["cached"] is False  # per-token logits stored
    # tagging every word O scores the share of O words; the student does better
    words = [json.loads(line) for line in open(data)]
    test = [tag for row in words if row["split"] == "test" for tag in row["tags"]]
    majority = test.count("O") / len(test)
    assert report["student"]["metrics"]["token_accuracy"] > majority + 0.1
    assert report["student"]["entity_f1"] > 0.3
    epochs = history["epochs"]
    assert {"token_soft_ce", "token_hard_ce", "val_entity_f1"} <= set(epochs)
    assert epochs["token_hard_ce"][-1] < epochs["token_hard_ce"][0]
    assert report["export"]["entity_f1"]["keras"] == pytest.approx(
        report["student"]["entity_f1"], abs=1e-6)
    assert "| model | test entity_f1 | test token_accuracy |" in summary


@pytest.mark.parametrize("teacher_f1, shown", [
    (0.0, "f1_micro n/a"), (float("nan"), "f1_micro n/a"), (0.5, "f1_micro 50.0%")])
def test_the_student_teacher_ratio_is_na_when_the_teacher_scored_nothing(
        teacher_f1, shown):
    """A multi-label teacher at f1_micro 0 (0/0 on tiny data) has no ratio
    to show; summary.md said "f1_micro 0.0%" (issue #51, item 7)."""
    from kdplug.evaluation.report import summary_markdown

    def model(f1):
        return {"f1_micro": f1, "metrics": {"f1_micro": f1}, "params": 10,
                "latency_ms": {"median": 1.0}}

    report = {"name": "toy", "method": "kd", "test_examples": 4, "data": "toy.jsonl",
              "latency_runs": 3, "task": "multi_label", "primary_metric": "f1_micro",
              "teacher": model(teacher_f1), "student": model(0.25), "seconds": {},
              "history": {}}
    assert f"Student / teacher: {shown}, parameters 100.0%" in summary_markdown(report)
