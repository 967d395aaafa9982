"""bench/claims.py: every row's config, the verdicts computed by hand, the
section rendered from stored results (no training: the smoke run is
`python bench/claims.py --smoke`, about 3 minutes)."""

import os
import types

import numpy as np
import pytest
from conftest import load_bench_script

from kdplug.config import config_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
claims = load_bench_script("claims")
verdicts = load_bench_script("verdicts")


def options(**kwargs):
    values = dict(epochs=4, teacher_epochs=4, intermediate_epochs=3, aug_n=None,
                  run_root="/tmp/runs/claims", smoke=False, gpu=False,
                  in_process=False, seed_lists={"movie": [0, 1, 2, 3, 4],
                                                "tweets": [0, 1, 2]})
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


def test_distilbert_control_is_the_distilbert_student_fine_tuned():
    control, distil = (claims.build_doc(claims.ROW_BY_ID[r], "movie", 0, options())
                       for r in ("ft_every_other", "distilbert"))
    assert control["student"] == distil["student"] == claims.EVERY_OTHER
    assert control["method"] == {"name": "kd", "alpha": 0.0, "temperature": 1.0}
    assert claim("distilbert_vs_control").better == "distilbert"


def test_summary_keeps_the_students_correctness_per_sentence(tmp_path):
    """From the run's `predictions.npz`: packed to bits in the results file,
    read back by the verdicts' paired sentence term."""
    labels = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1])
    student = np.eye(2)[[0, 1, 0, 0, 1, 1, 0, 1, 1]]
    np.savez(tmp_path / "predictions.npz", labels=labels, student=student,
             teacher=np.eye(2)[labels])
    correct = claims.student_correct(str(tmp_path))
    assert correct.tolist() == [1, 1, 0, 1, 1, 0, 1, 1, 1]
    packed = claims.pack_bits(correct)
    assert packed["n"] == 9 and claims.unpack_bits(packed).tolist() == correct.tolist()
    assert claims.student_correct(str(tmp_path / "none")) is None


def test_a_claim_with_kept_sentences_uses_the_paired_sentence_term():
    rng = np.random.default_rng(0)
    base = rng.random((3, 1060)) < 0.82
    rows = []
    for seed in range(3):
        worse = base[seed].astype("uint8")
        better = worse.copy()
        better[np.flatnonzero(worse == 0)[:30]] = 1  # 30 sentences more, each seed
        for rid, bits in (("kd", better), ("ft", worse)):
            rows.append(dict(entry(rid, seed, float(bits.mean()), "movie"),
                             correct=claims.pack_bits(bits)))
    verdict = claims.claim_verdict(claim("kd_beats_ft"), by_domain(*rows), "movie")
    assert verdict.test.endswith("paired by sentence")
    assert verdict.result == "reproduced"  # +2.8 points, the same 30 sentences
    for row in rows:
        del row["correct"]
    plain = claims.claim_verdict(claim("kd_beats_ft"), by_domain(*rows), "movie")
    assert plain.test.endswith("+ test set") and plain.p > verdict.p


def by_domain(*entries):
    """`claims.claim_verdict`'s input from a list of result entries."""
    return {d: claims.entries_by_row({"results": dict(enumerate(entries))}, d)
            for d in claims.DOMAINS}


def claim(claim_id):
    return next(c for c in claims.CLAIMS if c.id == claim_id)


def test_claim_verdicts_by_hand():
    """The claims' verdicts are `bench/verdicts.py`'s with each domain's test
    size: kd 0.83, 0.84, 0.85 against ft 0.80, 0.81, 0.79 (same seeds:
    paired), differences 0.03, 0.03, 0.06."""
    rows = [entry(r, s, a, domain) for domain in ("movie", "tweets")
            for r, accs in (("kd", (0.83, 0.84, 0.85)), ("ft", (0.80, 0.81, 0.79)))
            for s, a in enumerate(accs)]
    seed_var = (0.01 ** 2 + 0.01 ** 2 + 0.02 ** 2) / 2 / 3  # var(differences) / n
    for domain, n_test in (("movie", 1060), ("tweets", 420)):
        test_var = (0.84 * 0.16 + 0.80 * 0.20) / n_test  # binomial, both rows
        verdict = claims.claim_verdict(claim("kd_beats_ft"), by_domain(*rows), domain)
        assert verdict.effect == pytest.approx(0.04)
        assert verdict.p == pytest.approx(verdicts.tail(0.04, seed_var, test_var, 2))
        half = verdicts.half_width(seed_var, test_var, 2)
        assert (verdict.low, verdict.high) == pytest.approx((0.04 - half, 0.04 + half))
        assert verdict.test == "paired, 3 seeds (df 2) + test set"
    # 4 points at p 0.052 on movie's 1,060 sentences: not enough at 3 seeds
    movie = claims.claim_verdict(claim("kd_beats_ft"), by_domain(*rows), "movie")
    assert movie.result == "inconclusive" and movie.p == pytest.approx(0.052, abs=1e-3)
    assert movie.mde == pytest.approx(0.0574, abs=1e-4)
    # PKD-Skip >= PKD-Last: not worse by more than 1 point
    tie = [entry(r, s, a) for r in ("pkd_skip", "pkd_last")
           for s, a in enumerate((0.84, 0.85, 0.845))]
    verdict = claims.claim_verdict(claim("pkd_skip_vs_last"), by_domain(*tie), "movie")
    assert verdict.bound == "≥ -1.00 points" and verdict.effect == 0.0
    assert verdict.p == pytest.approx(verdicts.tail(0.01, 0.0, 2 * 0.845 * 0.155 / 1060, 2))
    one = claims.claim_verdict(claim("kd_beats_ft"), by_domain(*rows[:1], rows[3]), "movie")
    assert (one.result, one.test) == ("pending", "1 / 1 seed(s), 2 needed")
    assert one.effect_cell() == "+3.00 points so far"


def test_distilbert_ratio_by_hand():
    students = [entry("distilbert", s, a) for s, a in enumerate((0.83, 0.835, 0.84))]
    teacher = dict(entry("teacher", 0, 0.85))
    verdict = claims.claim_verdict(claim("distilbert_97"), by_domain(*students, teacher),
                                   "movie")
    ratios = [0.83 / 0.85, 0.835 / 0.85, 0.84 / 0.85]
    seed_var = np.var(ratios, ddof=1) / 3
    # delta method: (var a + (a / t)^2 var t) / t^2, binomial on 1,060 sentences
    test_var = (0.835 * 0.165 + (0.835 / 0.85) ** 2 * 0.85 * 0.15) / 1060 / 0.85 ** 2
    assert verdict.effect == pytest.approx(np.mean(ratios))
    assert verdict.p == pytest.approx(verdicts.tail(np.mean(ratios) - 0.97, seed_var,
                                                    test_var, 2))
    assert verdict.result == "inconclusive" and verdict.bound == "≥ 97.0%"


def entry(row, seed, accuracy, domain="movie"):
    return {"row": row, "seed": seed, "domain": domain, "accuracy": accuracy,
            "teacher_accuracy": 0.86, "train_s": 100.0, "smoke": False,
            "early_stopping": {"distill": {"best_epoch": 2, "epochs_run": 3}},
            "machine": {"cpus": 2, "cpu": "test cpu", "gpu_hidden": True}}


def fastbert_entry(seed, full, at_half, layers_at_half):
    return dict(entry("fastbert", seed, full), fastbert={
        "full": {"accuracy": full, "avg_layers": 6.0}, "rows": [
            {"speed": 0.0, "accuracy": full, "avg_layers": 6.0},
            {"speed": 0.5, "accuracy": at_half, "avg_layers": layers_at_half}]})


def test_fastbert_claim_reads_the_half_speed_point():
    fastbert = claim("fastbert_layers")
    # drops of 0.1, 0.2, 0.3 points at half the layers
    kept = [fastbert_entry(s, 0.85, 0.85 - d, 3.0) for s, d in enumerate((0.001, 0.002, 0.003))]
    verdict = claims.claim_verdict(fastbert, by_domain(*kept), "movie")
    test_var = (0.85 * 0.15 + 0.848 * 0.152) / 1060  # both accuracies, summed
    assert verdict.p == pytest.approx(verdicts.tail(0.01 - 0.002, 0.001 ** 2 / 3, test_var, 2))
    assert verdict.bound == "≤ 1.00 points lost" and verdict.note == (
        "speed 0.5: 50% of the layers")
    # 1,060 sentences cannot show a 0.2-point drop to be under 1 point at 3 seeds
    assert verdict.result == "inconclusive"
    lost = [fastbert_entry(s, 0.85, 0.85 - d, 2.0) for s, d in enumerate((0.04, 0.05, 0.06))]
    assert claims.claim_verdict(fastbert, by_domain(*lost), "movie").result == "not reproduced"
    none_saved = [fastbert_entry(s, 0.85, 0.85, 6.0) for s in range(3)]
    assert claims.claim_verdict(fastbert, by_domain(*none_saved), "movie").result == (
        "not reproduced")
    one = claims.claim_verdict(fastbert, by_domain(*kept[:1]), "movie")
    assert one.result == "pending" and one.effect_cell() == (
        "+0.10 points lost so far; speed 0.5: 50% of the layers")


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
    assert ("| claim | source | domain | claim's bound | effect [one-sided 95% bounds] | p "
            "| MDE (80% power, beyond the bound) | test | verdict |") in text
    movie, tweets = [l for l in text.splitlines() if l.startswith("| KD beats fine-tuning")]
    # by hand in test_claim_verdicts_by_hand: the same rows, p 0.052
    assert movie.endswith("| movie_snippets | > 0 points | +4.00 points [-0.07, +8.07] | "
                          "0.052 | 5.74 points | paired, 3 seeds (df 2) + test set | "
                          "**inconclusive** |")
    assert tweets.endswith("| tweets | > 0 points | – | – | – | 0 / 0 seed(s), 2 needed | "
                           "**pending** |")
    assert "Test sets: movie_snippets 1,060 sentences, tweets 420 sentences." in text
    assert "### tweets\n\nNot run yet." in text
    assert "2 CPU core(s) (test cpu), CPU only" in text


def test_campaign_order_is_seed_by_seed_after_the_teacher():
    args = options(domains=["movie"], seed_lists={"movie": [0, 1]},
                   rows=claims.select_rows("ft,kd"))
    order = [(r.id, s) for _, r, s in claims.todo_list(args)]
    assert order == [("teacher", 0), ("ft", 0), ("kd", 0), ("ft", 1), ("kd", 1)]
    with pytest.raises(ValueError, match="unknown row or group 'kdd'"):
        claims.select_rows("kdd")


def test_plan_gives_a_claims_rows_the_seeds_its_power_asks_for():
    assert claims.DOMAINS["movie"]["claim_seeds"] == {"kd_beats_ft": 10}
    assert claims.plan_seeds("ft", "movie") == claims.plan_seeds("kd", "movie") == list(
        range(10))
    assert claims.plan_seeds("pkd_last", "movie") == [0, 1, 2, 3, 4]
    assert claims.plan_seeds("kd", "tweets") == [0, 1, 2]
    args = options(domains=["movie"], seed_lists={}, rows=claims.select_rows("core"))
    order = [(r.id, s) for _, r, s in claims.todo_list(args)]
    assert order[:5] == [("teacher", 0), ("ft", 0), ("kd", 0), ("pkd_last", 0),
                         ("pkd_skip", 0)]
    assert order[20:] == [("pkd_skip", 4), ("ft", 5), ("kd", 5), ("ft", 6), ("kd", 6),
                          ("ft", 7), ("kd", 7), ("ft", 8), ("kd", 8), ("ft", 9),
                          ("kd", 9)]
    explicit = options(domains=["movie"], seed_lists={"movie": [7]},
                       rows=claims.select_rows("ft,pkd_last"))
    assert [(r.id, s) for _, r, s in claims.todo_list(explicit)][1:] == [
        ("ft", 7), ("pkd_last", 7)]  # --seeds: every row, the plan aside
    plan = ("movie_snippets seeds 0-4, 0-9 for `kd` and `ft` (KD beats fine-tuning the "
            "same student: its power asks for more); tweets seeds 0-2")
    assert "The plan: " + plan in claims.render({"results": {}})
    text = claims.estimates_text(options(seed_lists={}), {"results": {}})
    per_seed = {d: sum(r.estimate_s(d, args) for r in claims.ROWS
                       if r.runs_in(d) and r.kind != "teacher") for d in claims.DOMAINS}
    extra = sum(claims.ROW_BY_ID[r].estimate_s("movie", args) for r in ("ft", "kd"))
    assert (f"seeds 0-4, 0-9 for `kd` and `ft` (KD beats fine-tuning the same student: "
            f"its power asks for more): ~{(5 * per_seed['movie'] + 5 * extra) / 3600:.1f} h"
            ) in text
    assert f"seeds 0-2: ~{3 * per_seed['tweets'] / 3600:.1f} h" in text


def test_estimates_read_the_rows_measured_seeds():
    args = options()
    row = claims.ROW_BY_ID["kd"]
    modelled = row.estimate_s("movie", args)
    done = {"budget": claims.budget(row, args)}
    results = {"results": {
        "movie/kd/seed0": {**done, "wall_s": 500.0},
        "movie/kd/seed1": {**done, "wall_s": 700.0},
        "movie/kd/seed4": {**done, "wall_s": 600.0},
        "movie/kd/seed5": {**done, "wall_s": 2600.0},  # run beside other work
        "movie/kd/seed2": {**done, "wall_s": 60.0, "resumed": True},  # partial
        "movie/kd/seed3": {**done, "wall_s": 9.0, "error": "boom"},
        "tweets/kd/seed0": {**done, "wall_s": 50.0},
        "movie/kd_x/seed0": {**done, "wall_s": 5.0}}}
    assert row.estimate_s("movie", args, results) == 650.0  # the median
    # a seed that fine-tuned the teacher itself (a lost cache) counts without it
    results["results"]["movie/kd/seed1"].update(
        wall_s=1300.0, seconds={"teacher fine-tuning": 600.0},
        teacher_finetune={"cached": False})
    assert row.estimate_s("movie", args, results) == 650.0
    results["results"]["movie/kd/seed1"]["teacher_finetune"]["cached"] = True
    assert row.estimate_s("movie", args, results) == 950.0  # a cache hit: all its own
    results["results"]["movie/kd/seed1"].update(wall_s=700.0)
    assert row.estimate_s("tweets", args, results) == 50.0  # its own seed first
    # no tweets seed: movie's median, scaled by the steps per epoch
    del results["results"]["tweets/kd/seed0"]
    steps = claims.DOMAINS["tweets"]["steps"] / claims.DOMAINS["movie"]["steps"]
    assert row.estimate_s("tweets", args, results) == pytest.approx(650.0 * steps)
    other_budget = options(epochs=2)
    assert row.estimate_s("movie", other_budget, results) == row.estimate_s(
        "movie", other_budget)
    assert row.estimate_s("movie", args, {"results": {}}) == modelled
    # a stored teacher may be a cache hit: its estimate stays modelled
    teacher = claims.ROW_BY_ID["teacher"]
    results["results"]["movie/teacher/seed0"] = {
        "budget": claims.budget(teacher, args), "wall_s": 19.0}
    assert teacher.estimate_s("movie", args, results) == teacher.estimate_s("movie", args)
    text = claims.estimates_text(args, results)
    assert "~ 10.8 min" in text
    assert "seeds 0, 1, 2, 3, 4: ~" in text and "seeds 0, 1, 2: ~" in text


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
    args = options(domains=["movie", "tweets"], seed_lists={"movie": [0], "tweets": [0]},
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
    """The share of the ensembles' gain the distilled student keeps, judged
    at 50% by the per-seed contrast (kd - plain) - 0.5 (ensemble - plain)."""
    mtdnn = claim("mtdnn_ensemble")
    task = "tweet_sentiment"
    plain = [0.86, 0.87, 0.88]  # mean 0.87; the ensemble 0.90: gain 0.03
    kept = [mtdnn_entry(s, task, 0.90, p, 0.89) for s, p in enumerate(plain)]
    verdict = claims.claim_verdict(mtdnn, by_domain(*kept), "tweets")
    assert verdict.effect == pytest.approx(2 / 3)  # (0.89 - 0.87) / 0.03
    # contrasts 0.89 - 0.5 (0.90 + p) per seed: 0.01, 0.005, 0.0
    seed_var = 0.005 ** 2 / 3
    # the test-set term on 420 tweets: kd + 0.25 plain + 0.25 ensemble
    test_var = (0.89 * 0.11 + 0.25 * 0.87 * 0.13 + 0.25 * 0.90 * 0.10) / 420
    assert verdict.p == pytest.approx(verdicts.tail(0.005, seed_var, test_var, 2))
    assert verdict.result == "inconclusive" and verdict.bound == "≥ 50%"
    assert verdict.note == ("tweet_sentiment accuracy: ensemble 0.9000, multi-task 0.8700, "
                            "distilled 0.8900")
    # 20% kept of a 10-point gain on movie's 1,060 test examples: the
    # distillation gain is not significant, the claim's bound is rejected
    little = [mtdnn_entry(s, "movie_score", 0.90 + e, p, d) for s, (e, p, d) in enumerate(
        [(0.0, 0.795, 0.818), (0.002, 0.800, 0.822), (-0.002, 0.805, 0.820)])]
    verdict = claims.claim_verdict(mtdnn, by_domain(*little), "movie")
    assert verdict.effect == pytest.approx(0.2) and verdict.result == "not reproduced"
    no_gain = [mtdnn_entry(s, task, 0.86, p, 0.89) for s, p in enumerate(plain)]
    verdict = claims.claim_verdict(mtdnn, by_domain(*no_gain), "tweets")
    assert verdict.result == "inconclusive" and verdict.note.endswith("no gain to keep")
    one = claims.claim_verdict(mtdnn, by_domain(*kept[:1]), "tweets")
    assert (one.result, one.test) == ("pending", "1 seed(s), 2 needed")
    # seed 0 alone: (0.89 - 0.86) / (0.90 - 0.86)
    assert one.effect_cell() == ("75% so far; tweet_sentiment accuracy: ensemble 0.9000, "
                                 "multi-task 0.8600, distilled 0.8900")
    none = claims.claim_verdict(mtdnn, by_domain(*kept), "movie")  # no movie_score
    assert (none.result, none.test) == ("pending", "0 seed(s), 2 needed")


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
    movie, tweets = [line.split(" | ")[2:] for line in text.splitlines()
                     if line.startswith("| MT-DNN's distilled")]
    # movie_score: the distilled student loses the whole gain; tweets: keeps 67%
    assert movie[:3] == ["movie_snippets", "≥ 50%", "-100% [-∞, ∞]; movie_score pearson: "
                         "ensemble 0.8000, multi-task 0.7900, distilled 0.7800"]
    assert tweets[:3] == ["tweets", "≥ 50%", "67% [-∞, ∞]; tweet_sentiment accuracy: "
                          "ensemble 0.9000, multi-task 0.8700, distilled 0.8900"]
    assert movie[-1] == tweets[-1] == "**inconclusive** |"


def test_a_teacher_row_is_measured_again_when_students_report_another_teacher():
    teacher = dict(entry("teacher", 0, 0.8538), teacher_accuracy=0.8538)
    results = {"results": {"movie/teacher/seed0": teacher}}
    assert claims.teacher_is_current(teacher, results, "movie")  # no student yet
    results["results"]["movie/ft/seed0"] = dict(entry("ft", 0, 0.86), teacher_accuracy=0.8538)
    results["results"]["tweets/ft/seed0"] = entry("ft", 0, 0.92, domain="tweets")  # 0.86
    assert claims.teacher_is_current(teacher, results, "movie")
    # the cache was lost and the next student fine-tuned a different teacher
    results["results"]["movie/kd/seed0"] = dict(entry("kd", 0, 0.87), teacher_accuracy=0.866)
    assert not claims.teacher_is_current(teacher, results, "movie")
    args = options(domains=["movie"], rows=claims.select_rows("ft,kd"), force=False,
                   config_dir="/tmp/runs/claims-configs", timeout=None)
    row = claims.ROW_BY_ID["teacher"]
    job = claims.job("movie", row, 0, args, results)
    assert not job.keep(dict(teacher, budget=claims.budget(row, args)))
    del results["results"]["movie/kd/seed0"]
    assert job.keep(dict(teacher, budget=claims.budget(row, args)))


def test_stored_students_report_their_domains_stored_teacher():
    """bench/results/claims.json: every single-task row of a domain was
    distilled from the teacher its `teacher` row measured."""
    results = claims.load_results(os.path.join(ROOT, "bench", "results", "claims.json"))
    for domain in claims.DOMAINS:
        rows = claims.entries_by_row(results, domain)
        if "teacher" not in rows:
            continue
        teacher = rows["teacher"][0]["accuracy"]
        for e in claims.single_task_entries(rows):
            assert e["teacher_accuracy"] == pytest.approx(teacher, abs=1e-6), (
                f"{domain}/{e['row']}/seed{e['seed']}")
