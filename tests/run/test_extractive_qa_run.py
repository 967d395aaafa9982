"""`data.task: extractive_qa` end to end on toy questions: the teacher is
fine-tuned with the span loss, the student distilled with the span terms,
both measured with SQuAD F1 / exact match over every window of a context."""

import json

import pytest
from conftest import run_toy_config as run

from kdplug.cli import main
from kdplug.testing.toy_config import write_toy_config
from kdplug.testing.toy_tasks import write_toy_questions_jsonl

QA_DATA = {"task": "extractive_qa", "text_column": "question",
           "text_pair_column": "context", "label_column": "answers",
           "window_overlap": 4}


@pytest.mark.slow
def test_extractive_qa_run_finds_the_answers(tmp_path):
    data = write_toy_questions_jsonl(tmp_path / "qa.jsonl", 240)
    config = write_toy_config(
        tmp_path, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        student={"kind": "truncated", "layers": [1]},
        data={"path": data, **QA_DATA},
        teacher={"finetune": {"epochs": 4, "batch_size": 16, "learning_rate": 3e-3}},
        training={"epochs": 3, "length_buckets": True},
        cache={"teacher_outputs": True},
        export={"formats": ["keras"], "latency_batch_sizes": [1]})
    report, history, summary = run(config)
    assert report["task"] == "extractive_qa" and report["primary_metric"] == "f1"
    assert report["test_examples"] == 36  # questions (in 38 windows)
    assert list(report["student"]["metrics"]) == ["f1", "exact_match"]
    # one word answers: guessing a context word scores about 1 / 7.5 words
    assert report["teacher"]["f1"] > 0.8
    assert report["student"]["f1"] > 0.6
    assert report["student"]["metrics"]["exact_match"] <= report["student"]["f1"]
    epochs = history["epochs"]
    assert {"span_soft_ce", "span_hard_ce", "val_f1", "val_exact_match"} <= set(epochs)
    assert epochs["span_hard_ce"][-1] < epochs["span_hard_ce"][0]
    assert report["export"]["f1"]["keras"] == pytest.approx(report["student"]["f1"],
                                                           abs=1e-6)
    assert "| model | test f1 | test exact_match |" in summary
    # the finished run answers raw questions and measures its own test split
    run_dir = str(tmp_path / "runs" / "toy")
    context = "the plot was dull and the acting was superb"
    out = tmp_path / "answers.jsonl"
    assert main(["predict", run_dir, "--text", "good", "--pair", context,
                 "--output", str(out)]) == 0
    (record,) = [json.loads(line) for line in open(out)]
    assert record["answer"] == "superb"
    assert context[record["start"]:record["end"]] == "superb"
    assert record["score"] > record["null_score"]
    metrics = tmp_path / "evaluate.json"
    assert main(["evaluate", run_dir, "--split", "test", "--model", "both",
                 "--output", str(metrics)]) == 0
    measured = json.loads(metrics.read_text())
    assert measured["student"]["f1"] == pytest.approx(report["student"]["f1"])
    assert measured["teacher"]["f1"] == pytest.approx(report["teacher"]["f1"])


@pytest.mark.slow
@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_extractive_qa_on_other_keras_hub_families(tmp_path, family):
    """A RoBERTa (byte-level BPE, `</s></s>` between question and context)
    or ALBERT (SentencePiece) teacher gets a start/end head on every piece,
    its truncated student too, and both find the answers."""
    from kdplug.testing import families

    preset = families.write_tiny_preset(family, tmp_path / "teacher")
    data = write_toy_questions_jsonl(tmp_path / "qa.jsonl", 200)
    config = write_toy_config(
        tmp_path, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        student={"kind": "truncated", "layers": [1]},
        data={"path": data, **QA_DATA},
        teacher={"source": str(preset),
                 "finetune": {"epochs": 4, "batch_size": 16, "learning_rate": 3e-3}},
        training={"epochs": 3}, export=False)
    report, history, _ = run(config)
    assert report["teacher"]["f1"] > 0.6
    assert report["student"]["f1"] > 0.5
    epochs = history["epochs"]
    assert epochs["span_hard_ce"][-1] < epochs["span_hard_ce"][0]
