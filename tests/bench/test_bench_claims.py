"""bench/claims.py: every row's config, the verdicts computed by hand, the
section rendered from stored results (no training: the smoke run is
`python bench/claims.py --smoke`, about 3 minutes)."""

import os
import types

import pytest
from conftest import load_bench_script

from kdplug.config import config_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
claims = load_bench_script("claims")


def options(**kwargs):
    values = dict(epochs=4, teacher_epochs=4, intermediate_epochs=3, aug_n=None,
                  run_root="/tmp/runs/claims", smoke=False, gpu=False,
                  in_process=False)
    values.update(kwargs)
    return types.SimpleNamespace(**values)


@pytest.mark.parametrize("row_id", [r.id for r in claims.ROWS if r.kind != "mtdnn"])
def test_every_row_builds_a_valid_config_with_early_stopping(row_id):
    row = claims.ROW_BY_ID[row_id]
    for domain in claims.DOMAINS:
        doc = claims.build_doc(row, domain, 2, options())
        config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
        assert config.seed == 2 and config.data.path.endswith(
            os.path.basename(claims.DOMAINS[domain]["path"]))
        finetune = config.teacher.finetune
        assert finetune.seed == 0 and finetune.epochs == 4  # one teacher, every seed
        assert finetune.early_stopping.patience == 1
        stopping = config.training.early_stopping
        assert stopping.patience == 1 and config.training.epochs == 4
        assert config.training.length_buckets.window == 16
        assert stopping.monitor == ("val_loss" if row_id == "fastbert" else "val_accuracy")
        assert bool(config.augment) == (row_id == "bilstm_aug")


def test_rows_compared_by_a_claim_share_their_student():
    docs = {r: claims.build_doc(claims.ROW_BY_ID[r], "movie", 0, options())
            for r in ("ft", "kd", "pkd_last", "pkd_skip")}
    students = {r: (d["student"]["layers"], d["student"]["init"]) for r, d in docs.items()}
    assert set(students.values()) == {("first_k", "pretrained")}
    assert docs["ft"]["method"] == {"name": "kd", "alpha": 0.0, "temperature": 1.0}
    assert docs["kd"]["method"]["beta"] == 0.0 and docs["kd"]["method"]["name"] == "pkd"
    tiny = claims.build_doc(claims.ROW_BY_ID["tinybert_no_att"], "movie", 0, options())
    assert tiny["method"]["attention_weight"] == 0.0
    assert tiny["method"]["stages"] == ["task_intermediate", "task_prediction"]


def test_verdicts_by_hand():
    # means 0.84 / 0.80, sample sds 0.01 / 0.01: 0.83 > 0.81 -> reproduced
    assert claims.verdict([0.83, 0.84, 0.85], [0.79, 0.80, 0.81])[0] == "reproduced"
    result, detail = claims.verdict([0.79, 0.80, 0.81], [0.83, 0.84, 0.85])
    assert result == "not reproduced" and detail.startswith("-4.00 points")
    # 0.82 ± 0.02 vs 0.81 ± 0.01: 0.80 < 0.82 -> overlap
    assert claims.verdict([0.80, 0.82, 0.84], [0.80, 0.81, 0.82])[0].startswith(
        "inconclusive")
    assert claims.verdict([0.80, 0.82, 0.84], [0.80, 0.81, 0.82],
                          at_least=True)[0] == "reproduced (equal within spread)"
    assert claims.verdict([0.9, 0.9], [0.1, 0.1, 0.1]) == (
        "pending", "2 / 3 seed(s), 3 needed; so far +80.00 points")
    assert claims.verdict([], [0.1]) == ("pending", "0 / 1 seed(s), 3 needed")
    assert claims.ratio_verdict([0.8], 0.84) == (
        "pending", "1 seed(s), 3 needed; so far 95.2% of the teacher")
    # 0.82/0.84, 0.83/0.84, 0.81/0.84 -> 97.6%, 98.8%, 96.4% (mean 97.6, sd 1.2)
    result, detail = claims.ratio_verdict([0.82, 0.83, 0.81], 0.84)
    assert result == "inconclusive (spreads overlap)" and detail.startswith("97.6%")
    assert claims.ratio_verdict([0.83, 0.83, 0.83], 0.84)[0] == "reproduced"
    assert claims.ratio_verdict([0.70, 0.71, 0.72], 0.84)[0] == "not reproduced"


def fastbert_entry(full, at_half, layers_at_half):
    return {"fastbert": {"full": {"accuracy": full, "avg_layers": 6.0}, "rows": [
        {"speed": 0.0, "accuracy": full, "avg_layers": 6.0},
        {"speed": 0.5, "accuracy": at_half, "avg_layers": layers_at_half}]}}


def test_fastbert_verdict_reads_the_half_speed_point():
    kept = [fastbert_entry(0.85, 0.848, 3.0)] * 3  # -0.2 points, half the layers
    result, detail = claims.fastbert_verdict(kept)
    assert result == "reproduced" and "50% of the layers" in detail
    lost = [fastbert_entry(0.85, 0.80, 2.0)] * 3  # -5 points
    assert claims.fastbert_verdict(lost)[0] == "not reproduced"
    none_saved = [fastbert_entry(0.85, 0.85, 6.0)] * 3
    assert claims.fastbert_verdict(none_saved)[0] == "not reproduced"
    assert claims.fastbert_verdict(kept[:1]) == (
        "pending", "1 seed(s), 3 needed; so far 50% of the layers, accuracy -0.20 points")


def entry(row, seed, accuracy, domain="movie"):
    return {"row": row, "seed": seed, "domain": domain, "accuracy": accuracy,
            "teacher_accuracy": 0.86, "train_s": 100.0, "smoke": False,
            "early_stopping": {"distill": {"best_epoch": 2, "epochs_run": 3}},
            "machine": {"cpus": 2, "cpu": "test cpu", "gpu_hidden": True}}


def test_render_from_stored_results():
    results = {"results": {}}
    for seed, (ft, kd) in enumerate([(0.80, 0.83), (0.81, 0.84), (0.79, 0.85)]):
        results["results"][f"movie/ft/seed{seed}"] = entry("ft", seed, ft)
        results["results"][f"movie/kd/seed{seed}"] = entry("kd", seed, kd)
    results["results"]["movie/pkd_skip/seed0"] = dict(entry("pkd_skip", 0, 0.5),
                                                      error="boom")
    text = claims.render(results)
    assert "| `kd` |" in text and "0.8400 ± 0.0100" in text and "2/3; 2/3; 2/3" in text
    assert "| `pkd_skip` |" in text.split("### tweets")[0]  # the failed run: not run
    line = next(l for l in text.splitlines() if l.startswith("| KD beats fine-tuning"))
    assert "**reproduced**" in line and "+4.00 points" in line
    assert "### tweets\n\nNot run yet." in text
    assert "2 CPU core(s) (test cpu), CPU only" in text


def test_campaign_order_is_seed_by_seed_after_the_teacher():
    args = options(domains=["movie"], seed_list=[0, 1],
                   rows=claims.select_rows("ft,kd"))
    order = [(r.id, s) for _, r, s in claims.todo_list(args)]
    assert order == [("teacher", 0), ("ft", 0), ("kd", 0), ("ft", 1), ("kd", 1)]
    with pytest.raises(ValueError, match="unknown row or group 'kdd'"):
        claims.select_rows("kdd")


def test_estimates_read_the_rows_measured_seeds():
    args = options()
    row = claims.ROW_BY_ID["kd"]
    modelled = row.estimate_s("movie", args)
    done = {"budget": claims.budget(row, args)}
    results = {"results": {
        "movie/kd/seed0": {**done, "wall_s": 500.0},
        "movie/kd/seed1": {**done, "wall_s": 700.0},
        "movie/kd/seed2": {**done, "wall_s": 60.0, "resumed": True},  # partial
        "movie/kd/seed3": {**done, "wall_s": 9.0, "error": "boom"},
        "tweets/kd/seed0": {**done, "wall_s": 50.0},
        "movie/kd_x/seed0": {**done, "wall_s": 5.0}}}
    assert row.estimate_s("movie", args, results) == 600.0
    assert row.estimate_s("tweets", args, results) == 50.0  # its own seed first
    # no tweets seed: movie's mean, scaled by the steps per epoch
    del results["results"]["tweets/kd/seed0"]
    steps = claims.DOMAINS["tweets"]["steps"] / claims.DOMAINS["movie"]["steps"]
    assert row.estimate_s("tweets", args, results) == pytest.approx(600.0 * steps)
    other_budget = options(epochs=2)
    assert row.estimate_s("movie", other_budget, results) == row.estimate_s(
        "movie", other_budget)
    assert row.estimate_s("movie", args, {"results": {}}) == modelled
    # a stored teacher may be a cache hit: its estimate stays modelled
    teacher = claims.ROW_BY_ID["teacher"]
    results["results"]["movie/teacher/seed0"] = {
        "budget": claims.budget(teacher, args), "wall_s": 19.0}
    assert teacher.estimate_s("movie", args, results) == teacher.estimate_s("movie", args)
    assert "~ 10.0 min" in claims.estimates_text(args, results)


def test_mtdnn_row_runs_once_with_its_own_ensembles_and_baseline():
    row = claims.ROW_BY_ID["mtdnn"]
    doc = claims.build_doc(row, "movie", 2, options())
    config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
    assert config.seed == 2  # ensemble members: seeds 2 and 3
    assert config.teacher.finetune.seed is None and config.teacher.finetune.epochs == 4
    assert config.teacher.finetune.early_stopping.monitor == "val_loss"  # a score task
    assert config.training.early_stopping.monitor == "val_loss"
    assert config.training.length_buckets is None and config.training.epochs == 4
    mcfg = config.method_config
    assert mcfg.baselines == ["multi_task"]
    assert [t.name for t in mcfg.tasks] == ["movie_sentiment", "movie_score",
                                            "tweet_sentiment"]
    assert claims.budget(row, options())["length_buckets"] is False
    # both domains' data in one run: it runs in movie's part only
    args = options(domains=["movie", "tweets"], seed_list=[0],
                   rows=claims.select_rows("mtdnn"))
    assert [(d, r.id) for d, r, _ in claims.todo_list(args)] == [
        ("movie", "teacher"), ("movie", "mtdnn"), ("tweets", "teacher")]


def mtdnn_entry(seed, task, ensemble, plain, distilled, domain="movie"):
    return {"row": "mtdnn", "seed": seed, "domain": domain, "accuracy": distilled,
            "teacher_accuracy": ensemble, "train_s": 100.0, "wall_s": 300.0 + seed,
            "smoke": False, "machine": {"cpus": 2, "cpu": "test cpu", "gpu_hidden": True},
            "early_stopping": {"multi_task": {"best_epoch": 2, "epochs_run": 3},
                               "multi_task_kd": {"best_epoch": 3, "epochs_run": 4}},
            "tasks": {task: {"metric": "accuracy", "ensemble": ensemble,
                             "multi_task": plain, "multi_task_kd": distilled}}}


def test_mtdnn_verdict_by_hand():
    task = "tweet_sentiment"
    plain = [0.86, 0.87, 0.88]  # mean 0.87, sd 0.01; the ensemble 0.90: gain 0.03
    kept = [mtdnn_entry(s, task, 0.90, p, 0.89) for s, p in enumerate(plain)]
    result, detail = claims.mtdnn_verdict(kept, task)
    # 0.89 > 0.87 + 0.01, and (0.89 - 0.87) / 0.03 = 67% of the gain
    assert result == "reproduced", detail
    assert detail.startswith("tweet_sentiment accuracy: distilled vs multi-task +2.00 points")
    assert detail.endswith("keeps 67% of the ensemble's gain")
    # beats the multi-task student, but keeps 0.014 / 0.03 = 47% of the gain
    little = [mtdnn_entry(s, task, 0.90, p, 0.884) for s, p in enumerate(plain)]
    result, detail = claims.mtdnn_verdict(little, task)
    assert result == "not reproduced" and detail.endswith("keeps 47% of the ensemble's gain")
    worse = [mtdnn_entry(s, task, 0.90, p, 0.85) for s, p in enumerate(plain)]
    assert claims.mtdnn_verdict(worse, task)[0] == "not reproduced"
    no_gain = [mtdnn_entry(s, task, 0.86, p, 0.89) for s, p in enumerate(plain)]
    assert claims.mtdnn_verdict(no_gain, task)[0] == "inconclusive (no ensemble gain to keep)"
    assert claims.mtdnn_verdict(kept[:1], task) == (
        "pending", "1 seed(s), 3 needed; so far tweet_sentiment accuracy: ensemble "
        "0.9000, multi-task 0.8600, distilled 0.8900")
    assert claims.mtdnn_verdict(kept, "movie_score") == ("pending", "0 seed(s), 3 needed")


def test_render_gives_mtdnn_its_own_table_and_both_domains_a_verdict():
    results = {"results": {f"movie/ft/seed{s}": entry("ft", s, 0.80) for s in range(3)}}
    for seed, plain in enumerate([0.86, 0.87, 0.88]):
        e = mtdnn_entry(seed, "tweet_sentiment", 0.90, plain, 0.89)
        e["tasks"]["movie_score"] = {"metric": "pearson", "ensemble": 0.80,
                                     "multi_task": 0.79, "multi_task_kd": 0.78}
        results["results"][f"movie/mtdnn/seed{seed}"] = e
    text = claims.render(results)
    movie_table = text.split("### movie_snippets")[1].split("### tweets")[0]
    assert "`mtdnn`" not in movie_table
    assert "| `ft` | 3 layers" in movie_table and "| 93.0% |" in movie_table  # of 0.86
    table = text.split("### MT-DNN: both domains in one run")[1].split("### Verdicts")[0]
    assert ("| tweet_sentiment | accuracy | 0.9000 ± 0.0000 | 0.8700 ± 0.0100 | "
            "0.8900 ± 0.0000 | 0, 1, 2 |") in table
    assert "| movie_score | pearson | 0.8000 ± 0.0000 | 0.7900 ± 0.0000 |" in table
    assert "seed 0: 2/3, 3/4" in table and "fastest seed: 300 s" in table
    line = next(l for l in text.splitlines() if l.startswith("| MT-DNN's distilled"))
    movie_cell, tweets_cell = line.split(" | ")[2], line.split(" | ")[4]
    assert movie_cell.startswith("movie_score pearson: distilled vs multi-task -1.00 points")
    assert "**not reproduced**" in line and "**reproduced**" in line
    assert tweets_cell.endswith("keeps 67% of the ensemble's gain")
