"""bench/precision.py: its section rendered from a stored measurement."""

import pytest


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("precision")


def test_section_from_a_stored_measurement(bench):
    result = {
        "machine": {"arch": "x86_64", "cpu": "test cpu", "cpus": 2,
                    "bf16_flags": ["avx512_bf16"], "native_bfloat16": True,
                    "tensorflow": "2.21.0", "keras": "3.15.1"},
        "settings": {"batches": 24, "rounds": 3, "steps": 4, "sequence_length": 48,
                     "batch_size": 32},
        "finished": "2026-11-29T06:26:00+00:00",
        "roles": {"student train step": {"float32": [100.0, 110.0, 90.0],
                                   "mixed_bfloat16": [120.0, 143.0, 99.0]}}}
    text = bench.render(result)
    assert "bfloat16 flags: avx512_bf16; `training.mixed_precision: auto` gives " \
           "mixed_bfloat16 here" in text and "measured 2026-11-29" in text
    # medians 100.0 and 120.0; the rounds' ratios 1.2, 1.3, 1.1: median 1.20x
    row = [line for line in text.splitlines() if line.startswith("| student train step")]
    assert row and row[0].endswith("| 100.0 | 120.0 | 1.20x |")
