"""bench/seq2seq.py: each seed's config, the section from stored results (the
smoke run, `python bench/seq2seq.py --smoke`, trains; about a minute)."""

import math
import os
import types

import pytest

from conftest import load_bench_script

from kdplug.config import config_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
seq2seq = load_bench_script("seq2seq")


def test_every_seed_shares_the_teacher_and_trains_both_students():
    args = types.SimpleNamespace(run_root="/tmp/runs/seq2seq")
    doc = seq2seq.build_doc(2, args)
    config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
    assert config.seed == 2 and config.teacher.finetune.seed == 0
    assert config.method_config.mle_baseline is True
    assert config.data.path.endswith("punct_restore.tsv")
    assert doc["name"] == "seq2seq-s2" and config.training.epochs == 10


def test_a_shrunk_budget_sets_both_epochs_and_names_the_result():
    args = types.SimpleNamespace(run_root="/tmp/runs/seq2seq", teacher_epochs=3, epochs=2)
    doc = seq2seq.build_doc(1, args)
    config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
    assert config.teacher.finetune.epochs == 3 and config.training.epochs == 2
    assert seq2seq.budget(args) == {"teacher_epochs": 3, "epochs": 2}
    assert seq2seq.result_key(1, seq2seq.budget(args)) == "seed1-teacher3-epochs2"
    assert doc["name"] == "seq2seq-s1-teacher3-epochs2"
    assert seq2seq.result_key(1, {}) == "seed1"


def test_set_changes_config_fields_and_names_the_result():
    args = seq2seq.parse_args(["--epochs", "12", "--set", "student.hidden_dim=128",
                               "--set", "training.learning_rate=1e-3",
                               "--set", "student.num_encoder_layers=2"])
    assert args.set == {"student.hidden_dim": 128, "training.learning_rate": 1e-3,
                        "student.num_encoder_layers": 2}
    args.run_root = "/tmp/runs/seq2seq"
    doc = seq2seq.build_doc(0, args)
    config = config_from_dict(doc, file=os.path.join(ROOT, "runs", "x.yaml"))
    assert (config.student_config.hidden_dim, config.student_config.num_encoder_layers,
            config.student_config.num_decoder_layers) == (128, 2, 3)
    assert config.training.learning_rate == 1e-3 and config.training.epochs == 12
    assert seq2seq.load_base("cmlm_seq2seq")["student"]["hidden_dim"] == 256
    shrunk = seq2seq.budget(args)
    assert list(shrunk["set"]) == sorted(args.set)  # one order, one key
    key = seq2seq.result_key(0, shrunk)
    assert key.startswith("seed0-epochs12-set") and len(key) == len("seed0-epochs12-set") + 8
    assert seq2seq.result_key(0, dict(shrunk, set={"student.hidden_dim": 64})) != key
    assert seq2seq.budget_text(shrunk) == (
        "teacher at most 10 epochs, students 12 epochs; student.hidden_dim = 128, "
        "student.num_encoder_layers = 2, training.learning_rate = 0.001 "
        "(changed from the config's 10 and 10 to fit a few CPU hours per seed)")
    assert seq2seq.budget_text({"epochs": 12}).endswith(
        "students 12 epochs (changed from the config's 10 and 10 to fit a few CPU hours per seed)")


@pytest.mark.parametrize("option, message", [
    ("student.hidden_dim", "expected FIELD=VALUE"),
    ("training.epochs=3", "training.epochs: set by --epochs"),
    ("seed=4", "seed: set by --seeds"),
])
def test_set_refuses_what_the_bench_sets_itself(option, message, capsys):
    with pytest.raises(SystemExit):
        seq2seq.parse_args(["--set", option])
    assert message in capsys.readouterr().err


def test_set_names_a_field_under_something_that_is_not_a_section():
    args = types.SimpleNamespace(run_root="/tmp/r", set={"method.top_k.x": 1})
    with pytest.raises(ValueError, match="method.top_k is not a section"):
        seq2seq.build_doc(0, args)


def entry(seed, mle, kd):
    variant = lambda bleu: {"bleu": bleu, "exact_match": bleu / 200,  # noqa: E731
                            "token_accuracy": 0.9, "perplexity": 1.5, "params": 10,
                            "decode_sentences_per_s": 50.0}
    return {"seed": seed, "variants": {"mle": variant(mle), "cmlm_kd": variant(kd)},
            "teacher_masked_accuracy": 0.7, "teacher_finetune_s": 600.0,
            "teacher_finetune_cached": seed != 0, "soft_labels_s": 300.0,
            "soft_labels_bytes": 3 * 2**20, "train_s": {"mle": 100.0, "cmlm_kd": 110.0},
            "soft_labels": {"passes": 7, "top_k": 8, "temperature": 10.0},
            "machine": {"cpus": 2, "cpu": "test cpu", "gpu_hidden": True},
            "decoding": {"strategy": "beam", "beam_width": 5, "length_penalty": 0.6},
            "smoke": False}


def test_render_means_gains_and_costs_by_hand():
    results = {"results": {f"seed{s}": entry(s, mle, kd) for s, (mle, kd) in
                           enumerate([(40.0, 42.0), (41.0, 42.5), (42.0, 43.5)])}}
    text = seq2seq.render(results)
    assert "| student, MLE only | 41.00 ± 1.00 |" in text
    assert "| student + C-MLM distillation | 42.67 ± 0.76 |" in text
    assert "+2.00, +1.50, +1.50 BLEU (mean 1.67 ± 0.29)" in text
    # paired t on the gains, though the two rows' spreads overlap (42.67 -
    # 0.76 < 41.00 + 1.00): SE 0.29 / sqrt(3) = 0.167, t = 10.0, 2 df,
    # p = (1 - 10 / sqrt(102)) / 2 = 0.005; bounds 1.67 -/+ 2.92 x 0.167
    assert ("The paper's gain (C-MLM distillation > MLE): **reproduced** (claim > 0 "
            "BLEU): +1.67 BLEU [+1.18, +2.15] (one-sided 95% bounds), p = 0.005, MDE "
            "0.66 BLEU (paired, 3 seeds (df 2), no test-set term).") in text
    assert "C-MLM fine-tuning 600 s;" in text and "3.0 MiB" in text
    assert "2 CPU core(s) (test cpu), CPU only" in text
    assert "Decoding: beam 5, length penalty 0.6." in text
    assert "Not run yet." in seq2seq.render({"results": {}})


def test_each_budget_has_its_own_table_and_verdict():
    shrunk = {"teacher_epochs": 3, "epochs": 3}
    results = {"results": {
        "seed0": entry(0, 40.0, 42.0),
        "seed0-teacher3-epochs3": dict(entry(0, 20.0, 25.0), budget=shrunk),
        "seed1-teacher3-epochs3": dict(entry(1, 22.0, 24.0), budget=shrunk)}}
    text = seq2seq.render(results)
    config, small = text.split("### Budget: ")[1:]
    assert config.startswith("the config's (teacher at most 10 epochs, students 10 epochs)")
    assert "| student, MLE only | 40.00 |" in config
    assert "**pending** (+2.00 BLEU so far; 1 / 1 seed(s), 2 needed)" in config
    assert small.startswith("teacher at most 3 epochs, students 3 epochs (shrunk")
    # never averaged across budgets: 20 and 22 only
    assert "| student, MLE only | 21.00 ± 1.41 |" in small
    # gains 5 and 2: SE 1.5, t = 2.33 with 1 df, p = 1/2 - atan(2.33) / pi = 0.129
    assert "+5.00, +2.00 BLEU" in small and "**inconclusive** (claim > 0 BLEU): " in small
    assert "p = 0.129" in small and "(paired, 2 seeds (df 1), no test-set term)" in small


def test_a_budget_whose_teacher_was_cached_shows_the_cost_where_it_was_paid():
    """The caches are shared across student budgets: a budget whose runs
    all found them shows the times of the run that computed them."""
    first = dict(entry(0, 20.0, 25.0), budget={"teacher_epochs": 3, "epochs": 3})
    first.update(teacher_finetune_s=2500.0, soft_labels_s=1500.0)
    longer = dict(entry(0, 38.0, 22.0), budget={"teacher_epochs": 3, "epochs": 12},
                  teacher_finetune_cached=True, soft_labels_s=0.1)
    other_teacher = dict(entry(0, 30.0, 31.0), budget={"teacher_epochs": 5, "epochs": 5},
                         teacher_finetune_cached=True, soft_labels_s=0.1)
    text = seq2seq.render({"results": {"a": first, "b": longer, "c": other_teacher}})
    by_budget = {part.split(" (")[0]: part for part in text.split("### Budget: ")[1:]}
    cost = ("C-MLM fine-tuning 2500 s; soft labels (7 passes, top 8) 1500 s and 3.0 MiB "
            "(train + dev, int32 ids + float16 probabilities)")
    assert f"{cost}." in by_budget["teacher at most 3 epochs, students 3 epochs"]
    assert (f"{cost}; both cached for these runs, the times are those of the run "
            "that computed them (seed 0, students 3 epochs).") in by_budget[
        "teacher at most 3 epochs, students 12 epochs"]
    # no run computed a 5-epoch teacher: its own (cache-hit) times, not another's
    assert "C-MLM fine-tuning 600 s; soft labels (7 passes, top 8) 0 s" in by_budget[
        "teacher at most 5 epochs, students 5 epochs"]


def test_gain_verdict_by_hand():
    def entries(*pairs):
        return [entry(s, mle, kd) for s, (mle, kd) in enumerate(pairs)]

    # gains -1, -2, -1.5: mean -1.5, SE 0.5 / sqrt(3), t = -5.2 with 2 df
    verdict = seq2seq.gain_verdict(entries((10.0, 9.0), (10.0, 8.0), (10.0, 8.5)))
    t = 1.5 / (0.5 / math.sqrt(3))
    assert verdict.p == pytest.approx(1 - (1 - t / math.sqrt(t * t + 2)) / 2)
    assert verdict.result == "not reproduced"
    # gains 2, 0, -0.5: the bounds contain 0
    assert seq2seq.gain_verdict(entries((1.0, 3.0), (1.0, 1.0), (1.0, 0.5))).result == (
        "inconclusive")
    assert seq2seq.gain_verdict(entries((1.0, 1.4), (1.0, 1.6), (1.0, 1.5))).result == (
        "reproduced")
    assert seq2seq.gain_verdict(entries((1.0, 2.0))).result == "pending"
