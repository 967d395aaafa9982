"""bench/escape.py: the subsample, every row's config, the escape step
computed by hand from a report, and the section rendered from stored
results (no training)."""

import csv
import math
import os
import types

import pytest
from conftest import load_bench_script

from kdplug.config import config_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
escape = load_bench_script("escape")


def options(tmp_path):
    return types.SimpleNamespace(run_root=str(tmp_path), seeds=[0], domains=["movie"])


def test_the_subsample_is_stratified_shuffled_and_keeps_dev_and_test(tmp_path):
    path = escape.subsample("movie", str(tmp_path), n=300, seed=0)
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    train = [r for r in rows if r["split"] == "train"]
    with open(os.path.join(ROOT, "data", "movie_snippets.tsv"), encoding="utf-8") as f:
        full = list(csv.DictReader(f, delimiter="\t"))
    full_train = [r for r in full if r["split"] == "train"]
    assert len(train) == 300
    share = sum(r["label"] == "1" for r in train) / 300
    full_share = sum(r["label"] == "1" for r in full_train) / len(full_train)
    assert abs(share - full_share) < 1 / 300 + 1e-9  # each class its share, rounded
    # shuffled: the labels of the stored (label-sorted) file do not come in blocks
    runs = 1 + sum(a["label"] != b["label"] for a, b in zip(train, train[1:]))
    assert runs > 100  # a random order of 300 gives ~150 runs, sorted gives 2
    assert len(rows) - 300 == sum(r["split"] != "train" for r in full)
    assert escape.subsample("movie", str(tmp_path), n=300) == path  # kept


@pytest.mark.parametrize("row", escape.ROWS, ids=lambda r: r.id)
def test_every_row_builds_a_valid_config(row, tmp_path):
    doc = escape.build_doc(row, "tweets", 1, options(tmp_path))
    config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
    assert config.teacher.pooling == row.changes.get("teacher.pooling", "auto")
    assert config.seed == 1 and config.training.epochs == 2
    assert config.teacher.finetune.seed == 0 and config.teacher.finetune.epochs == 2
    assert not config.augment and not config.export
    assert config.cache.teacher_outputs


def report(hard=None, accuracy=None, label_share=0.55):
    steps = {"step": [5, 10, 15, 20, 25, 30]}
    if hard is not None:
        steps["hard_ce"] = hard
    if accuracy is not None:
        steps["accuracy"] = accuracy
    return {"step_history": {"intermediate": {"step": [5]}, "distill": steps},
            "student": {"collapse": {"label_share": label_share}}}


def test_escape_step_by_hand():
    level = 0.9 * math.log(2)  # 0.624
    hard = [0.70, 0.69, 0.65, 0.62, 0.50, 0.40]
    # the window ending at step 20 is the first below 0.624: 20 steps
    assert escape.escape_step(report(hard=hard)) == (20, "hard loss")
    assert escape.escape_step(report(hard=[0.69] * 6)) == (None, "hard loss")
    # no hard term: accuracy above 0.55 + 0.1 from the window ending at 15
    acc = [0.5, 0.55, 0.7, 0.8, 0.8, 0.9]
    assert escape.escape_step(report(accuracy=acc)) == (15, "accuracy")
    # neither a hard term nor labels (FastBERT's branches log accuracy 0)
    assert escape.escape_step(report(accuracy=[0.0] * 6)) == (None, "n/a")
    assert level < 0.65


def test_render_counts_never_and_collapses():
    results = {"results": {
        f"movie/shipped/pkd_skip/seed{s}": {
            "row": "shipped/pkd_skip", "domain": "movie", "seed": s,
            "escape_step": step, "escape_by": "hard loss", "stage_steps": 190,
            "accuracy": acc, "majority_share": 0.51, "collapsed": collapsed}
        for s, step, acc, collapsed in ((0, 40, 0.80, False), (1, None, 0.51, True))}}
    text = escape.render(results)
    assert ("| `shipped/pkd_skip` | as shipped | movie | 0, 1 | 40, never (of 190) | "
            "0.6550 ± 0.2051 | 0.510 | 1 of 2 |") in text
    assert text.endswith("As shipped: 2 run(s) of 1 config(s), 1 collapsed, 1 never escaped; "
                         "the latest escape is `shipped/pkd_skip` (movie, seed 0) at step 40 "
                         "of 190 (21%).")
