"""A toy run on a training split sorted by label: the cached teacher
outputs stream random batches, and the run's report says so (label mix and
collapse checks in metrics.json and summary.md; issues #47, #54)."""

import csv
import json
import os

import pytest

from kdplug.cli import main
from kdplug.testing import write_toy_tsv
from kdplug.testing.toy_config import write_toy_config

# Both tests read the module's toy run (about 11 s on 2 busy cores).
pytestmark = pytest.mark.slow


def sort_training_split_by_label(path):
    """Rewrites a toy TSV with its training rows sorted by label (negatives
    first), the other splits after them, as the bundled movie data is."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    train = sorted((r for r in rows if r["split"] == "train"), key=lambda r: r["label"])
    rest = [r for r in rows if r["split"] != "train"]
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(train + rest)
    return [int(r["label"]) for r in train]


@pytest.fixture(scope="module")
def sorted_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sorted-run")
    data = write_toy_tsv(os.path.join(folder, "sorted.tsv"), num_examples=480)
    labels = sort_training_split_by_label(data)
    assert labels == sorted(labels) and 0.3 < sum(labels) / len(labels) < 0.7
    config = write_toy_config(
        folder, {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        data={"path": data}, student={"kind": "truncated", "layers": [1]},
        cache={"teacher_outputs": True, "shard_size": 48},
        training={"epochs": 1}, export=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KDPLUG_CACHE_DIR", str(folder / "cache"))
        assert main(["run", config]) == 0
    run = folder / "runs" / "toy"
    return json.loads((run / "metrics.json").read_text()), (run / "summary.md").read_text()


def test_the_cached_stream_of_a_sorted_split_is_reported_random(sorted_run):
    report, summary = sorted_run
    assert report["teacher_output_cache"]["cached"] is False  # computed: streamed
    [(stage, checks)] = report["checks"].items()
    mix = checks["batch_mix"]
    # 336 training examples in batches of 16: 21 batches, ratio near 1
    assert (mix["batches"], mix["examples"]) == (21, 336)
    assert not mix["far_from_random"] and mix["ratio"] < mix["threshold"]
    assert mix["dominated_batches"] <= 1 / 21
    assert f"**{stage}**" in summary and "label mix of the first epoch's 21 batches" in summary


def test_the_collapse_checks_run_every_epoch_and_at_the_end(sorted_run):
    report, summary = sorted_run
    [checks] = report["checks"].values()
    assert [c["epoch"] for c in checks["collapse"]] == [1]
    assert checks["collapse"][0]["checked"] is True
    for role in ("teacher", "student"):
        collapse = report[role]["collapse"]
        assert collapse["checked"] and 0.3 < collapse["label_share"] < 0.7
        assert collapse["collapsed"] == ("has collapsed" in summary and role in summary)
