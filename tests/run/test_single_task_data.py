"""`kdplug run` on one file per split, class names for labels and no test
split (issue #17): the run evaluates on the validation split and says so,
and saves its label map with the run and beside the export."""

import csv
import json

import pytest
import yaml

from kdplug.cli import main
from kdplug.testing import toy_sentences
from kdplug.testing.toy_config import write_toy_config


def write_named_split_files(folder, num_examples=120):
    """train.csv and dev.csv (no test file) with labels `neg` / `pos`."""
    texts, labels = toy_sentences(num_examples, seed=0)
    cut = int(0.75 * num_examples)
    paths = {}
    for split, rows in (("train", range(cut)), ("dev", range(cut, num_examples))):
        paths[split] = str(folder / f"{split}.csv")
        with open(paths[split], "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["sentence", "sentiment"])
            writer.writerows([texts[i], "pos" if labels[i] else "neg"] for i in rows)
    return paths


@pytest.mark.slow
def test_run_with_named_labels_per_split_files_and_no_test_split(tmp_path, capsys):
    paths = write_named_split_files(tmp_path)
    config = write_toy_config(
        tmp_path, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        data={"path": None, **paths, "text_column": "sentence",
              "label_column": "sentiment"},
        student={"kind": "truncated", "layers": [1]},
        training={"epochs": 1},
        export={"formats": ["keras"], "latency_batch_sizes": [1]})
    assert main(["validate", config]) == 0
    out = capsys.readouterr().out
    assert "train.csv 90 (neg: " in out and "data: labels 0 neg, 1 pos" in out

    assert main(["run", config]) == 0
    run_dir = tmp_path / "runs" / "toy"
    expected = {"names": ["neg", "pos"], "ids": {"neg": 0, "pos": 1},
                "label_column": "sentiment", "origin": "inferred from the train split"}
    assert json.loads((run_dir / "label_map.json").read_text()) == expected
    assert json.loads((run_dir / "export" / "labels.json").read_text()) == expected
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["evaluation_split"] == "validation"
    assert metrics["test_examples"] == 30  # the dev file's rows
    assert metrics["data"] == f"train: {paths['train']}, dev: {paths['dev']}"
    summary = (run_dir / "summary.md").read_text()
    assert "Validation split: 30 examples" in summary
    assert "no test split" in summary and "test accuracy" not in summary
    assert "| model | validation accuracy |" in summary
    assert "Labels: 0 `neg`, 1 `pos` (inferred from the train split" in summary
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())["data"]
    assert resolved["path"] is None and resolved["test"] is None
