"""bench/cache_memory.py: the table and the flatness verdict."""

import pytest


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("cache_memory")


def row(factor, examples, stream, load):
    return {"factor": factor, "examples": examples, "bytes": examples * 2**20 // 10,
            "precompute": {"peak_mib": 1000.0}, "stream": {"peak_mib": stream},
            "load": {"peak_mib": load}}


def test_flat_streaming_is_reported_as_flat(bench):
    text = bench.render([row(1, 1000, 970.0, 1000.0), row(16, 16000, 1010.0, 3900.0)], 1000)
    assert "| 16x | 16,000 | 1,600 MiB | 1,000 MiB | 1,010 MiB | 3,900 MiB |" in text
    assert "+4.1% (flat; the target is within 10%)" in text


def test_growing_streaming_is_not_flat(bench):
    text = bench.render([row(1, 100, 800.0, 800.0), row(16, 1600, 1000.0, 1400.0)], 100)
    assert "+25.0% (NOT flat" in text
