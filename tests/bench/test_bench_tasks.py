"""bench/tasks.py: every task x row config, the section rendered from stored
results (no training), and benchlib.run_jobs' keep / rerun / record rules."""

import os

import pytest
from conftest import load_bench_script

from kdplug.config import config_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
tasks = load_bench_script("tasks")
import benchlib  # noqa: E402  (bench/ is on sys.path now)


@pytest.mark.parametrize("task", list(tasks.TASKS))
def test_every_row_builds_a_valid_config_of_its_task(task):
    args = tasks.parse_args(["--seeds", "0,1"])
    for row in tasks.ROWS:
        doc = tasks.build_doc(task, row, 1, args)
        config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
        assert config.task == task and config.seed == 1
        primary = tasks.TASKS[task][1]
        assert config.training.early_stopping.monitor == f"val_{primary}"
        assert config.teacher.finetune.early_stopping.monitor == f"val_{primary}"
        assert config.teacher.finetune.seed == 0  # one teacher for every seed
        assert config.student_config.init == "pretrained"
        assert config.method.name == ("pkd" if row == "pkd" else "kd")


def entry(task, row, seed, value, teacher=0.8):
    names = {"regression": ["pearson", "spearman"]}.get(task, ["f1_micro"])
    return {"task": task, "row": row, "seed": seed, "primary": names[0],
            "value": value, "teacher_value": teacher,
            "metrics": {n: value for n in names},
            "teacher_metrics": {n: teacher for n in names},
            "params": 11_000_000, "teacher_params": 22_700_000, "kept": {"distill": [2, 3]},
            "teacher_kept": 3, "budget": {"epochs": 3, "teacher_epochs": 3},
            "machine": {"cpus": 2, "cpu": "x", "gpu_hidden": True}}


def test_section_tables_and_reading():
    results = {"results": {
        "a": entry("regression", "ft", 0, 0.70), "b": entry("regression", "kd", 0, 0.74),
        "c": entry("regression", "pkd", 0, 0.73), "d": entry("regression", "kd", 1, 0.76),
        "e": {"task": "multi_label", "row": "kd", "seed": 0, "error": "boom"}}}
    text = tasks.render(results)
    assert "| model | seeds | pearson | spearman | parameters | kept epoch |" in text
    assert "| teacher (fine-tuned) | 1 | 0.8000 | 0.8000 | 22.7M | 3 |" in text
    assert "| kd: `kd` (alpha 0.5, T 2): same student | 2 | 0.7500 ± 0.0141 |" in text
    assert "- regression: against fine-tuning only, kd +0.0500, pkd +0.0300 (one seed" in text
    assert "### multi_label\n\nNot run yet." in text  # the failed run is not a result
    assert "the teacher scores below" not in text
    weak = {"results": {"a": entry("token_classification", "ft", 0, 0.41, teacher=0.16),
                        "b": entry("token_classification", "kd", 0, 0.14, teacher=0.16)}}
    assert ("kd -0.2700 (one seed: differences under 0.02 are within seed noise); the "
            "teacher scores below the student fine-tuned") in tasks.render(weak)


def test_run_jobs_keeps_reruns_and_records(capsys):
    results = {"results": {"kept": {"value": 1, "budget": 3},
                           "stale": {"value": 2, "budget": 2},
                           "failed": {"error": "old"}}}
    ran, saved, rendered = [], [], []

    def job(key, fail=False):
        def run():
            ran.append(key)
            if fail:
                raise RuntimeError("exit status 1")
            return {"value": 10}
        return benchlib.Job(key, run, summarise=lambda report, wall: {**report, "budget": 3},
                   describe=lambda e: f"value {e['value']}",
                   keep=lambda stored: stored.get("budget") == 3,
                   failure={"row": key})

    failures = benchlib.run_jobs([job("kept"), job("stale"), job("failed"), job("new", fail=True)],
                        results, lambda: saved.append(1), lambda: rendered.append(1))
    assert ran == ["stale", "failed", "new"] and failures == 1
    assert results["results"]["kept"] == {"value": 1, "budget": 3}
    assert results["results"]["stale"] == {"value": 10, "budget": 3}
    assert results["results"]["new"]["error"] == "exit status 1"
    assert results["results"]["new"]["row"] == "new"
    assert len(saved) == 3 and len(rendered) == 3  # after each success, and at the end
    out = capsys.readouterr().out
    assert "kept: stored result kept (value 1)" in out and "new: FAILED after" in out
