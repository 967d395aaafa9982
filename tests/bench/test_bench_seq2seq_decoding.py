"""bench/seq2seq_decoding.py: cached and full decoding, and the two beam
samplers, timed side by side; the section rendered from a stored
measurement."""

import json

import pytest


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("seq2seq_decoding")


def stored():
    return {"machine": {"cpus": 2, "cpu": "test cpu", "python": "3.11.7",
                        "tensorflow": "2.21.0", "keras": "3.15.1", "keras_hub": "0.32.0",
                        "gpu_hidden": False},
            "settings": {"rounds": 3, "batch_size": 16, "batches": 1, "smoke": False,
                         "beam_width": 5},
            "model": {"params": 13_351_234, "steps": 64},
            "finished": "2026-11-29T06:26:00+00:00",
            "ms_per_sentence": {
                "greedy, cache": [170.0, 160.0, 200.0],
                "greedy, whole prefix": [600.0, 640.0, 590.0],
                "beam, cache": [500.0, 510.0, 530.0],
                "beam, whole prefix": [2600.0, 2550.0, 2700.0],
                "beam, cache, keras-hub BeamSampler": [1200.0, 1250.0, 1300.0]}}


def test_section_from_a_stored_measurement(bench):
    text = bench.render(stored())
    # 13,351,234 parameters: 13.4M
    assert text.startswith(
        "Student of `configs/cmlm_seq2seq.yaml` (13.4M parameters, random weights), 16 "
        "sources per batch, every row decoding all 64 steps; median of 3 rounds, ms per "
        "sentence. 2 CPU core(s) (test cpu), GPU allowed; TensorFlow 2.21.0, Keras 3.15.1, "
        "keras-hub 0.32.0\n")
    # greedy: medians 600.0 (whole prefix) and 170.0 (cache): 600 / 170 = 3.529, 3.53x
    assert "| greedy | 600.0 | 170.0 | 3.53x |" in text
    # beam: medians 2600.0 and 510.0: 2600 / 510 = 5.098, 5.10x
    assert "| beam, width 5 | 2600.0 | 510.0 | 5.10x |" in text
    # samplers: keras-hub's median 1250.0, kdplug's 510.0: 1250 / 510 = 2.451, 2.45x
    assert "| keras-hub `BeamSampler` | 1250.0 | 1.00x |" in text
    assert "| kdplug `RowBeamSampler` | 510.0 | 2.45x |" in text


def test_render_only_writes_the_stored_section(bench, tmp_path):
    results, page = tmp_path / "seq2seq_decoding.json", tmp_path / "performance.md"
    results.write_text(json.dumps(stored()))
    assert bench.main(["--render-only", "--results", str(results),
                       "--write-docs", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Throughput\n")  # a new page gets the throughput page's title
    start, end = "<!-- seq2seq-decoding:start -->\n", "\n<!-- seq2seq-decoding:end -->"
    assert text[text.index(start) + len(start):text.index(end)] == \
        bench.render(stored()).rstrip()


def test_a_smoke_run_keeps_its_results_away_from_the_real_ones(bench, tmp_path):
    assert bench.parse_args(["--smoke"]).results == bench.SMOKE_RESULTS
    assert bench.parse_args([]).results.endswith("bench/results/seq2seq_decoding.json")
    chosen = str(tmp_path / "x.json")
    assert bench.parse_args(["--smoke", "--results", chosen]).results == chosen


@pytest.mark.slow
def test_smoke_run_times_both_and_checks_the_same_tokens(bench, tmp_path):
    doc, results = tmp_path / "performance.md", tmp_path / "seq2seq_decoding.json"
    assert bench.main(["--smoke", "--rounds", "2", "--batch-size", "4",
                       "--results", str(results), "--write-docs", str(doc)]) == 0
    text = doc.read_text()
    assert "<!-- seq2seq-decoding:start -->" in text
    rows = [line for line in text.splitlines() if line.startswith(("| greedy", "| beam"))]
    assert len(rows) == 2
    for row in rows:
        full, cached, ratio = row.split("|")[2:5]
        assert float(full) > 0 and float(cached) > 0
        assert float(ratio.strip().rstrip("x")) > 0
    samplers = [line for line in text.splitlines()
                if line.startswith(("| keras-hub `BeamSampler`", "| kdplug `RowBeamSampler`"))]
    assert len(samplers) == 2
    assert all(float(line.split("|")[2]) > 0 for line in samplers)
    stored_result = json.loads(results.read_text())
    assert stored_result["settings"]["smoke"] is True
    assert all(len(times) == 2 for times in stored_result["ms_per_sentence"].values())
    assert bench.render(stored_result).rstrip() in text
