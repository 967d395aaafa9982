"""bench/fastbert.py: the smoke mode end to end, and its Markdown section."""

import os

import keras
import pytest
from conftest import OTHER_SECTIONS

from kdplug import testing
from kdplug_plugins.fastbert.early_exit_classifier import EarlyExitBertClassifier

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("fastbert")


@pytest.mark.slow
def test_smoke_run_writes_png_and_section(bench, tmp_path, results_docs):
    """The smoke run is also fastbert's `kdplug run` end to end: the
    student's backbone and final classifier are the fine-tuned teacher's
    (frozen), and the saved student exits early."""
    docs = results_docs
    out = bench.run(bench.parse_args([
        "--smoke", "--output-dir", str(tmp_path / "run"),
        "--write-docs", str(docs / "results.md")]))
    curve = out["curve"]
    assert curve["batch_sizes"] == [16, 4]
    layers = [r["avg_layers"] for r in curve["rows"]]
    assert layers[0] == 3.0 and layers[-1] == 1.0  # speed 0 and 1
    assert layers == sorted(layers, reverse=True)
    loss = out["report"]["history"]["self_distill"]["loss"]
    assert len(loss) == 1  # one self-distillation epoch
    assert "export" not in out["report"]
    report = out["report"]
    assert report["student"]["accuracy"] == pytest.approx(report["teacher"]["accuracy"])
    saved = keras.saving.load_model(str(tmp_path / "run" / "student.keras"))
    assert isinstance(saved, EarlyExitBertClassifier)
    x, _ = testing.toy_batch(4, vocabulary_size=20)
    logits, exits = saved.predict_adaptive(x, 0.0)  # speed 0: every layer
    assert logits.shape == (4, 2) and exits.tolist() == [3, 3, 3, 3]
    with open(docs / "img" / "fastbert_curve.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    text = (docs / "results.md").read_text()
    before, rest = text.split(bench.START)
    section, after = rest.split(bench.END)
    # Everything outside the fastbert markers is untouched.
    assert before == OTHER_SECTIONS.rstrip("\n") + "\n\n" and after == "\n"
    assert "**Smoke run**" in section
    assert "| full model |" in section and "(batch 4)" in section
    assert section.count("\n| 0.") == 10 and "\n| 1.00 |" in section
    assert "](img/fastbert_curve.png)" in section
    # the paper's claim through bench/verdicts.py: one run is one seed
    assert "Claim (Liu et al. 2020): at speed 0.5 the exits lose at most 1.00 point" in section
    # (the toy model exits nowhere at speed 0.5: no layer saved)
    assert ("(`bench/verdicts.py`): **not reproduced** (claim ≤ 1.00 points lost): "
            "+0.00 points lost; speed 0.5: 100% of the layers, none saved (no layer "
            "saved). One run is one seed") in section
    # the run is stored: --render-only writes the same section from the file alone
    assert os.path.isfile(tmp_path / "run" / "fastbert.json")
    (docs / "results.md").write_text(before + bench.START + "stale" + bench.END + after)
    bench.run(bench.parse_args([
        "--smoke", "--render-only", "--output-dir", str(tmp_path / "run"),
        "--write-docs", str(docs / "results.md")]))
    assert (docs / "results.md").read_text() == text


def test_real_mode_defaults(bench):
    args = bench.parse_args([])
    assert args.write_docs == os.path.join(ROOT, "docs", "results.md")
    assert args.batch_sizes == [64, 16] and args.epochs == 1
    with pytest.raises(SystemExit):
        bench.parse_args(["--batch-sizes", "1"])
