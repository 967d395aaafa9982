"""bench/cli_startup.py: timing one command, and its section (table and
verdict) rendered from a stored measurement."""

import json

import pytest


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("cli_startup")


MACHINE = {"cpus": 2, "cpu": "test cpu", "python": "3.11.7", "tensorflow": "2.21.0",
           "keras": "3.15.1", "keras_hub": "0.32.0", "gpu_hidden": False}


def stored(commands, baseline="abc1234", rounds=3):
    return {"machine": MACHINE, "settings": {"rounds": rounds, "baseline": baseline},
            "finished": "2026-11-29T06:26:00+00:00", "commands": commands}


def test_times_a_fresh_command_and_sees_no_tensorflow(bench, tmp_path):
    seconds, tf_imported = bench.time_command(["cache", "ls"], None, str(tmp_path))
    assert 0 < seconds < 30 and tf_imported is False


def test_section_from_a_stored_measurement(bench):
    result = stored({
        "kdplug --help": {"this": [0.1, 0.3, 0.2], "baseline": [4.0, 4.2, 3.8],
                          "tf": {"this": False, "baseline": True}},
        "kdplug plugins": {"this": [2.0, 2.1, 1.9], "baseline": [4.0, 3.9, 4.4],
                           "tf": {"this": True, "baseline": True}}})
    text = bench.render(result)
    assert text.startswith("### CLI start-up (2026-11-29: test cpu, 2 cores, median of 3)")
    assert "this tree and kdplug at `abc1234` alternating in every round." in text
    # medians 0.2 and 4.0: 4.0 / 0.2 = 20.0x
    assert "| `kdplug --help` | 0.20 | no | 4.00 | yes | 20.0x |" in text
    # medians 2.0 and 4.0: 4.0 / 2.0 = 2.0x
    assert "| `kdplug plugins` | 2.00 | yes | 4.00 | yes | 2.0x |" in text
    # the slowest median, 2.0 s, is over the 1.5-s target
    assert "Target: every command under 1.5 s on this machine: NOT met " \
           "(slowest 2.00 s)." in text
    result["commands"].pop("kdplug plugins")
    assert "under 1.5 s on this machine: met (slowest 0.20 s)" in bench.render(result)


def test_section_without_a_baseline(bench):
    result = stored({"kdplug cache ls": {"this": [0.04, 0.08, 0.1, 0.06], "baseline": [],
                                         "tf": {"this": False}}}, baseline=None, rounds=4)
    text = bench.render(result)
    assert "this tree and no baseline." in text and "median of 4)" in text
    # median of 0.04, 0.06, 0.08, 0.1: (0.06 + 0.08) / 2 = 0.07
    assert "| command | seconds | TensorFlow |\n|---|---:|---|\n" \
           "| `kdplug cache ls` | 0.07 | no |\n" in text


def test_render_only_writes_the_stored_section(bench, tmp_path):
    results, page = tmp_path / "cli_startup.json", tmp_path / "performance.md"
    result = stored({"kdplug --help": {"this": [0.1], "baseline": [0.3],
                                       "tf": {"this": False, "baseline": False}}},
                    rounds=1)
    results.write_text(json.dumps(result))
    assert bench.main(["--render-only", "--results", str(results),
                       "--write-docs", str(page)]) == 0
    text = page.read_text()
    start, end = "<!-- cli-startup:start -->\n", "\n<!-- cli-startup:end -->"
    section = text[text.index(start) + len(start):text.index(end)]
    # 0.3 / 0.1 = 3.0x
    assert "| `kdplug --help` | 0.10 | no | 0.30 | no | 3.0x |" in section
    assert section == bench.render(result).rstrip()
