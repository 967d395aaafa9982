"""`evaluation.metrics` end to end: test-split metrics in metrics.json and
summary.md, validation metrics each epoch in the history (and early
stopping on one of them)."""

import json

from kdplug.cli import main
from kdplug.testing.toy_config import write_toy_config


def test_run_reports_configured_metrics_and_stops_on_val_f1(tmp_path):
    config = write_toy_config(
        tmp_path, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        num_examples=120,
        student={"kind": "truncated", "layers": [1]},
        training={"epochs": 2, "early_stopping": {"monitor": "val_f1_macro"}},
        evaluation={"metrics": ["accuracy", "f1_macro", "mcc"]},
        export={"formats": ["keras"], "latency_batch_sizes": [1]})
    assert main(["run", config]) == 0
    run_dir = tmp_path / "runs" / "toy"
    report = json.loads((run_dir / "metrics.json").read_text())
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
