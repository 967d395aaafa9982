"""bench/seq2seq_decoding.py: cached and full decoding, and the two beam
samplers, timed side by side."""

import pytest


@pytest.mark.slow
def test_smoke_run_times_both_and_checks_the_same_tokens(bench_script, tmp_path):
    bench = bench_script("seq2seq_decoding")
    doc = tmp_path / "performance.md"
    assert bench.main(["--smoke", "--rounds", "2", "--batch-size", "4",
                       "--write-docs", str(doc)]) == 0
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
