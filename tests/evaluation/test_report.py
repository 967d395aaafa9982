"""kdplug/evaluation/report.py: the run summary's time lines, where a part
that finished a killed run's work says that its seconds are a share."""

from kdplug.evaluation.report import resumed_parts
from kdplug.evaluation.report import time_lines


def report(finetune=None, cache=None):
    return {"seconds": {"teacher fine-tuning": 284.34, "teacher outputs": 61.5,
                        "stage distill": 1203.9},
            "teacher": {"accuracy": 0.85, "finetune": finetune},
            "teacher_output_cache": cache}


def test_an_uninterrupted_run_lists_its_parts_as_they_are():
    whole = report(finetune={"seconds": 284.34, "cached": False},
                   cache={"computed": [0, 1, 2], "reused": [], "cached": False})
    assert resumed_parts(whole) == {}
    assert time_lines(whole) == ["- teacher fine-tuning: 284 s",
                                 "- teacher outputs: 62 s",
                                 "- stage distill: 1204 s"]
    # a cache hit (nothing computed) is no resumption either
    assert resumed_parts(report(cache={"computed": [], "reused": [0, 1]})) == {}


def test_resumed_parts_are_marked_as_this_runs_share():
    resumed = report(finetune={"seconds": 284.34, "resumed_at_epoch": 2},
                     cache={"computed": [2], "reused": [0, 1]})
    assert resumed_parts(resumed) == {
        "teacher fine-tuning": "resumed after epoch 2",
        "teacher outputs": "2 of 3 shards written by an earlier run"}
    assert time_lines(resumed) == [
        "- teacher fine-tuning: 284 s (resumed after epoch 2: this run's part only)",
        "- teacher outputs: 62 s (2 of 3 shards written by an earlier run: this "
        "run's part only)",
        "- stage distill: 1204 s"]
