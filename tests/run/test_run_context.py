"""`RunContext`: the settings every runner reads from it."""

import pytest

from kdplug.config import config_from_dict
from kdplug.data.length_buckets import LengthBuckets
from kdplug.run.context import RunContext

BASE = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"},
        "method": {"name": "kd"}}


class OtherBuckets(LengthBuckets):
    """Stands for a runner's own kind (e.g. C-MLM's `Seq2SeqLengthBuckets`)."""


@pytest.mark.parametrize("section,expected", [
    (False, None), (True, (16, 8)), ({"window": 1, "multiple": 4}, (1, 4))])
def test_length_buckets_follow_the_training_section_and_log_once(section, expected,
                                                                 kdplug_log):
    config = config_from_dict({**BASE, "training": {"length_buckets": section}})
    context = RunContext.create(config)
    buckets = context.length_buckets()
    other = context.length_buckets(OtherBuckets)
    if expected is None:
        assert buckets is None and other is None
        assert not any("length buckets" in m for m in kdplug_log())
        return
    assert type(buckets) is LengthBuckets and type(other) is OtherBuckets
    assert (buckets.window, buckets.multiple) == (other.window, other.multiple) == expected
    logged = [m for m in kdplug_log() if m.startswith("length buckets:")]
    assert logged == [f"length buckets: training batches sorted by length in windows "
                      f"of {expected[0]} batches, each cut to its longest sentence "
                      f"(multiples of {expected[1]})"]


@pytest.mark.parametrize("written,runs", [("auto", False), (True, True), (False, False)])
def test_jit_compile_auto_is_resolved_for_the_run_and_kept_in_the_settings(written, runs):
    """`training.jit_compile: auto` (the default) runs without XLA on this
    CPU-only machine, as Keras' own "auto" does; the run's settings keep the
    value as written, so a re-run on another machine reuses its stages."""
    config = config_from_dict({**BASE, "training": {"jit_compile": written}})
    context = RunContext.create(config)
    assert context.config.training.jit_compile is runs
    assert context.settings["training"]["jit_compile"] == written
    assert config.training.jit_compile == written  # the caller's config untouched


def test_jit_compile_defaults_to_auto():
    assert config_from_dict(BASE).training.jit_compile == "auto"
