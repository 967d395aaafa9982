"""bench/mtdnn.py: its runtime estimate, its Markdown section, the smoke run."""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("mtdnn")



def test_real_benchmark_estimate_matches_the_measured_run(bench, capsys):
    out = bench.run(bench.parse_args(["--estimate"]))
    parts = out["estimate"]
    # measured on a 2-core EPYC: 34 min with 3 of 4 teachers cached
    assert 35 * 60 < parts["total"] < 45 * 60, parts
    assert 20 * 60 < parts["students"] < 30 * 60, parts  # measured 27 min
    assert parts["teachers"] > 0 and parts["students"] > 0
    assert "estimated" in capsys.readouterr().out


@pytest.mark.slow
def test_smoke_run_writes_the_section(bench, tmp_path, results_docs):
    docs = results_docs
    out = bench.run(bench.parse_args([
        "--smoke", "--output-dir", str(tmp_path / "run"), "--docs", str(docs)]))
    report = out["report"]
    assert list(report["variants"]) == [
        "single_task-toy_sentiment", "single_task-toy_score",
        "single_task-other_sentiment", "multi_task", "multi_task_kd"]
    assert set(report["teacher"]["tasks"]) == {"toy_score", "other_sentiment"}
    text = (docs / "results.md").read_text()
    assert "Intro written by hand." in text and "quality table" in text
    assert text.rstrip().endswith(bench.END)
    section = text[text.index(bench.START):]
    assert "## MT-DNN ensemble distillation" in section
    assert "| toy_score | Pearson / Spearman |" in section
    assert "multi-task student + ensemble KD" in section
    assert "Smoke run" in section
    # the run's own summary names the baselines too
    (summary,) = (tmp_path / "run").rglob("summary.md")
    text = summary.read_text()
    assert "single-task students" in text and "multi-task student + ensemble KD" in text
