"""bench/cli_startup.py: timing one command, the table and its verdict."""

import pytest


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("cli_startup")


def test_times_a_fresh_command_and_sees_no_tensorflow(bench, tmp_path):
    seconds, tf_imported = bench.time_command(["cache", "ls"], None, str(tmp_path))
    assert 0 < seconds < 30 and tf_imported is False


def test_table_ratios_and_verdict(bench):
    runs = {"kdplug --help": {"this": [0.1, 0.3, 0.2], "baseline": [4.0, 4.2, 3.8],
                              "tf": {"this": False, "baseline": True}},
            "kdplug plugins": {"this": [2.0, 2.0, 2.0], "baseline": [4.0, 4.0, 4.0],
                               "tf": {"this": True, "baseline": True}}}
    text = bench.render(runs, "abc1234", 3)
    assert "| `kdplug --help` | 0.20 | no | 4.00 | yes | 20.0x |" in text
    assert "| `kdplug plugins` | 2.00 | yes | 4.00 | yes | 2.0x |" in text
    assert "NOT met (slowest 2.00 s)" in text
    runs.pop("kdplug plugins")
    assert "under 1.5 s on this machine: met" in bench.render(runs, "abc1234", 3)
