"""bench/cache_memory.py: its section (the table and the flatness verdict)
rendered from a stored measurement."""

import json

import pytest


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("cache_memory")


def cell(examples, peak, mib_on_disk):
    return {"examples": examples, "peak_mib": peak, "start_mib": 600.0,
            "bytes": int(mib_on_disk * 2**20)}


def row(factor, examples, mib_on_disk, precompute, stream, load):
    return {"factor": factor, "precompute": cell(examples, precompute, mib_on_disk),
            "stream": cell(examples, stream, mib_on_disk),
            "load": cell(examples, load, mib_on_disk)}


def stored(rows, base=1000):
    return {"machine": {"cpus": 2, "cpu": "test cpu", "python": "3.11.7",
                        "tensorflow": "2.21.0", "keras": "3.15.1", "keras_hub": "0.32.0",
                        "gpu_hidden": False},
            "settings": {"base": base, "factors": [r["factor"] for r in rows],
                         "taps": ["logits", "hidden/1"], "sequence_length": 64,
                         "shard_size": 128},
            "finished": "2026-11-29T06:26:00+00:00", "rows": rows}


def test_flat_streaming_is_reported_as_flat(bench):
    text = bench.render(stored([row(1, 1000, 93.6, 1000.4, 970.0, 1000.0),
                                row(16, 16000, 1600.0, 1160.0, 1010.0, 3900.0)]))
    assert text.startswith("### Teacher-output cache memory (2026-11-29: test cpu, 2 cores)")
    assert "`python bench/cache_memory.py --base 1000 --write-docs`: taps logits, " \
           "hidden/1 (float16 on disk, shards of 128, each a random sample of the set), " \
           "sequence length 64, a 384-wide teacher;" in text
    # 93.6 MiB on disk shown as 94; 1000.4 MiB as 1,000
    assert "| 1x | 1,000 | 94 MiB | 1,000 MiB | 970 MiB | 1,000 MiB |" in text
    assert "| 16x | 16,000 | 1,600 MiB | 1,160 MiB | 1,010 MiB | 3,900 MiB |" in text
    # streamed peaks 970 -> 1010: 1010 / 970 - 1 = +4.12%, shown +4.1%
    assert "Streamed epoch peak from 1x to 16x: +4.1% (flat; the target is within 10%)." \
        in text


def test_growing_streaming_is_not_flat(bench):
    # streamed peaks 800, 1100 (4x), 1000 (16x): the highest, 1100 / 800 - 1 = +37.5%
    text = bench.render(stored([row(1, 100, 9.0, 800.0, 800.0, 800.0),
                                row(4, 400, 36.0, 800.0, 1100.0, 1000.0),
                                row(16, 1600, 144.0, 800.0, 1000.0, 1400.0)], base=100))
    assert "--base 100 --write-docs" in text
    assert "| 4x | 400 | 36 MiB | 800 MiB | 1,100 MiB | 1,000 MiB |" in text
    assert "from 1x to 16x: +37.5% (NOT flat; the target is within 10%)." in text


def test_render_only_writes_the_stored_section_and_exits_by_the_verdict(bench, tmp_path):
    results, page = tmp_path / "cache_memory.json", tmp_path / "performance.md"
    result = stored([row(1, 10, 1.0, 900.0, 900.0, 900.0),
                     row(16, 160, 16.0, 900.0, 1000.0, 950.0)], base=10)
    results.write_text(json.dumps(result))
    args = ["--render-only", "--results", str(results), "--write-docs", str(page)]
    # 1000 / 900 - 1 = +11.1%: not flat, exit status 1
    assert bench.main(args) == 1
    text = page.read_text()
    start, end = "<!-- cache-memory:start -->\n", "\n<!-- cache-memory:end -->"
    assert text[text.index(start) + len(start):text.index(end)] == \
        bench.render(result).rstrip()
    assert "+11.1% (NOT flat" in text
    result["rows"][1]["stream"]["peak_mib"] = 981.0  # 981 / 900 - 1 = +9.0%: flat
    results.write_text(json.dumps(result))
    assert bench.main(args) == 0
    assert "+9.0% (flat;" in page.read_text()
