"""bench/length_buckets.py: its section rendered from a stored measurement
(training and evaluation parts), and a run replacing only the parts it
measures."""

import copy
import json

import pytest

MACHINE = {"arch": "x86_64", "cpu": "test cpu", "cpus": 2, "tensorflow": "2.21.0",
           "keras": "3.15.1"}
BUCKETS = "buckets (window 16, multiple 8)"
TRAINING = {
    "machine": MACHINE,
    "settings": {"batches": 2, "rounds": 3, "steps": 1, "sequence_length": 48,
                 "batch_size": 32},
    "examples": 1000,  # one epoch: ceil(1000 / 32) = 32 batches, 32 * 32 = 1024 examples
    "padding": {
        # 32 batches x 32 x 48 = 49,152 positions, half of them real: 50.0% padding
        "padded": {"fed": 49152, "real": 24576, "batches_by_width": [[48, 32]]},
        # 32 x (16 x 8 + 32 x 16 + 48 x 8) = 32,768 fed: 1 - 24,576 / 32,768 = 25.0%,
        # 32,768 / 49,152 = 0.67 of the padded positions
        BUCKETS: {"fed": 32768, "real": 24576,
                  "batches_by_width": [[16, 8], [32, 16], [48, 8]]}},
    "throughput": {"teacher forward": {
        "rates": {"padded, XLA": [100.0, 120.0, 80.0],
                  "padded, no XLA": [90.0, 132.0, 96.0],
                  f"{BUCKETS}, XLA": [150.0, 180.0, 200.0],
                  f"{BUCKETS}, no XLA": [200.0, 240.0, 120.0]},
        "first_steps": {"padded, XLA": {"widths": 1, "seconds": 7.2},
                        "padded, no XLA": {"widths": 1, "seconds": 2.6},
                        f"{BUCKETS}, XLA": {"widths": 3, "seconds": 30.4},
                        f"{BUCKETS}, no XLA": {"widths": 3, "seconds": 6.0}}}},
    "finished": "2026-11-29T06:26:00+00:00"}
# The section as the script wrote it before it kept its results, for these numbers.
TRAINING_SECTION = """\
Machine: x86_64 test cpu, 2 usable CPU cores, TF 2.21.0, Keras 3.15.1; movie_snippets \
training split (1000 sentences), MiniLM-L6 tokenizer, sequence length 48, batch 32.

| batches | padding fraction | positions fed | vs padded | batches by width |
|---|---|---|---|---|
| padded | 50.0% | 49,152 | 1.00 | 48: 32 |
| buckets (window 16, multiple 8) | 25.0% | 32,768 | 0.67 | 16: 8, 32: 16, 48: 8 |

Teacher forward (6-layer MiniLM classifier, inference, the teacher-output precompute): \
2 batches of one shuffled epoch per variant, 3 interleaved rounds x 1 steps after running \
every width once (its first step: XLA compilation or a TF trace, plus one step). One \
epoch = the first steps + 32 batches at the median rate.

| batches, compiler | examples/s (median) | min | max | vs padded XLA (median of the \
rounds' ratios) | widths: first steps | one epoch (estimate) |
|---|---|---|---|---|---|---|
| padded, XLA | 100.0 | 80.0 | 120.0 | 1.00x | 1: 7 s | 17 s |
| padded, no XLA | 96.0 | 90.0 | 132.0 | 1.10x | 1: 3 s | 13 s |
| buckets (window 16, multiple 8), XLA | 180.0 | 150.0 | 200.0 | 1.50x | 3: 30 s | 36 s |
| buckets (window 16, multiple 8), no XLA | 200.0 | 120.0 | 240.0 | 2.00x | 3: 6 s | 11 s |"""
# Per variant: median rate, min, max; the rounds' ratios to padded XLA (100, 120, 80);
# one epoch = first steps + 1024 examples / median rate:
#   padded, XLA:        ratios 1, 1, 1;           7.2 + 1024 / 100 = 17.4 -> 17 s
#   padded, no XLA:     ratios 0.9, 1.1, 1.2 -> 1.10x; 2.6 + 1024 / 96 = 13.3 -> 13 s
#   buckets, XLA:       ratios 1.5, 1.5, 2.5 -> 1.50x; 30.4 + 1024 / 180 = 36.1 -> 36 s
#   buckets, no XLA:    ratios 2.0, 2.0, 1.5 -> 2.00x; 6.0 + 1024 / 200 = 11.1 -> 11 s
EVALUATION = {
    "machine": MACHINE,
    "settings": {"rounds": 4, "batch_size": 64, "sequence_length": 48, "multiple": 8},
    "examples": 1000, "fed": {"padded": 48000, "buckets": 31200},  # 0.65x
    "widths": [16, 32, 48],
    "passes": {"no XLA": {
        "teacher": {"seconds": {"padded": [10.0, 12.0, 9.0, 11.0],
                                "buckets": [5.0, 8.0, 6.0, 4.0]},
                    "first": {"padded": 14.04, "buckets": 20.26},
                    "max_diff": 3.2e-6, "same_argmax": True},
        "student (3 layers)": {"seconds": {"padded": [2.0, 2.0], "buckets": [1.0, 1.0]},
                               "first": {"padded": 3.0, "buckets": 4.0},
                               "max_diff": 0.5, "same_argmax": False}}},
    "finished": "2026-11-30T08:00:00+00:00"}
EVALUATION_TABLE = """\
| model | padded s (median) | buckets s (median) | min / max buckets s | speed-up \
(median of the rounds' ratios) | first pass padded / buckets s | largest logit \
difference | same argmax |
|---|---|---|---|---|---|---|---|
| teacher | 10.50 | 5.50 | 4.00 / 8.00 | 1.75x | 14.0 / 20.3 | 3.2e-06 | yes |
| student (3 layers) | 2.00 | 1.00 | 1.00 / 1.00 | 2.00x | 3.0 / 4.0 | 5.0e-01 | NO |"""
# teacher: padded median (10 + 11) / 2 = 10.50, buckets (5 + 6) / 2 = 5.50, min 4, max 8;
# the rounds' ratios 10/5 = 2, 12/8 = 1.5, 9/6 = 1.5, 11/4 = 2.75: median
# (1.5 + 2) / 2 = 1.75x. student: 2 / 1 every round: 2.00x.
EVALUATION_INTRO = (
    "`predict_outputs` over the test split (1000 sentences, batch 64), padded to 48 vs "
    "in length buckets (multiple 8: widths 16, 32, 48; 31,200 positions fed against "
    "48,000, 0.65x); 4 interleaved rounds of one whole pass per variant after a first "
    "pass each (traces or compilations, one per width).")


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("length_buckets")


def test_the_training_section_from_a_stored_measurement(bench):
    assert bench.render({"training": TRAINING}) == TRAINING_SECTION


def test_the_evaluation_part_alone_names_its_machine(bench):
    text = bench.render({"evaluation": EVALUATION})
    assert text == (
        "Evaluation pass (no XLA; measured 2026-11-30 on x86_64 test cpu, 2 usable CPU "
        "cores, TF 2.21.0, Keras 3.15.1): " + EVALUATION_INTRO + "\n\n" + EVALUATION_TABLE)


def test_both_parts_one_section(bench):
    text = bench.render({"evaluation": EVALUATION, "training": TRAINING})
    # the training part first whatever the stored order; its machine line covers
    # the evaluation measured on the same machine
    assert text == (TRAINING_SECTION + "\n\nEvaluation pass (no XLA; measured "
                    "2026-11-30): " + EVALUATION_INTRO + "\n\n" + EVALUATION_TABLE)
    elsewhere = dict(EVALUATION, machine=dict(MACHINE, cpus=4))
    text = bench.render({"training": TRAINING, "evaluation": elsewhere})
    assert "(no XLA; measured 2026-11-30 on x86_64 test cpu, 4 usable CPU cores, " \
           "TF 2.21.0, Keras 3.15.1): `predict_outputs`" in text


def test_the_accuracy_part(bench):
    part = {"machine": MACHINE, "settings": {"seed": 0}, "finished": "2026-12-01T00:00:00",
            "runs": {"padded": {"accuracy": 0.81234, "teacher": 0.86, "train_s": 120.4,
                                "total_s": 300.6},
                     "buckets": {"accuracy": 0.8, "teacher": 0.86, "train_s": None,
                                 "total_s": 250.0}}}
    lines = bench.render({"training": TRAINING, "accuracy": part}).splitlines()
    assert lines[-6].startswith("Quickstart (kd, 1 epoch, seed 0; measured 2026-12-01), "
                                "padded vs length buckets")
    # a distill stage not reported shows as 0
    assert lines[-2:] == ["| padded | 0.8123 | 0.8600 | 120 | 301 |",
                          "| buckets | 0.8000 | 0.8600 | 0 | 250 |"]


def test_nothing_stored_is_nothing_to_render(bench):
    for stored in (None, {}, {"training": None}):
        with pytest.raises(SystemExit, match="no stored measurement"):
            bench.render(stored)


@pytest.fixture
def stubbed(bench, monkeypatch):
    """The script with its measurements replaced by canned parts; `calls`
    lists the parts measured."""
    calls = []
    new_training = copy.deepcopy(TRAINING)
    new_training["finished"] = "2026-12-02T00:00:00+00:00"
    new_evaluation = copy.deepcopy(EVALUATION)
    new_evaluation["finished"] = "2026-12-03T00:00:00+00:00"

    def training(args, teacher, tokenizer):
        calls.append("training")
        return new_training

    def evaluation(args, teacher, tokenizer):
        calls.append(("evaluation", args.eval_rounds))
        return new_evaluation

    monkeypatch.setattr(bench, "load_models", lambda: (None, None))
    monkeypatch.setattr(bench, "measure_training", training)
    monkeypatch.setattr(bench, "measure_evaluation", evaluation)
    return bench, calls, new_training, new_evaluation


def test_a_run_replaces_only_the_parts_it_measures(stubbed, tmp_path, capsys):
    bench, calls, new_training, new_evaluation = stubbed
    results, page = tmp_path / "length_buckets.json", tmp_path / "performance.md"
    results.write_text(json.dumps({"training": TRAINING, "evaluation": EVALUATION}))
    bench.main(["--skip-throughput", "--evaluation", "--eval-rounds", "2",
                "--results", str(results), "--write-docs", str(page)])
    assert calls == [("evaluation", 2)]
    stored = json.loads(results.read_text())
    assert stored == {"training": TRAINING, "evaluation": new_evaluation}
    assert page.read_text() == ("# Throughput\n\n<!-- length_buckets:start -->\n"
                                + bench.render(stored) + "\n<!-- length_buckets:end -->\n")
    assert "measured 2026-12-03" in page.read_text()

    calls.clear()  # the training part alone, by default
    bench.main(["--results", str(results)])
    assert calls == ["training"]
    assert json.loads(results.read_text()) == {"training": new_training,
                                               "evaluation": new_evaluation}
    assert capsys.readouterr().out.rstrip().endswith(EVALUATION_TABLE)


def test_a_first_run_stores_its_part_and_render_only_rewrites_the_section(
        stubbed, tmp_path):
    bench, calls, _, new_evaluation = stubbed
    results, page, again = (tmp_path / "r.json", tmp_path / "p.md", tmp_path / "again.md")
    bench.main(["--skip-throughput", "--evaluation", "--results", str(results),
                "--write-docs", str(page)])
    assert json.loads(results.read_text()) == {"evaluation": new_evaluation}
    calls.clear()
    bench.main(["--render-only", "--results", str(results), "--write-docs", str(again)])
    assert calls == [] and again.read_text() == page.read_text()


def test_a_file_that_is_not_its_results_is_never_overwritten(stubbed, tmp_path):
    bench, calls, _, _ = stubbed
    results = tmp_path / "r.json"
    for text in ("not json", json.dumps({"roles": {}}), "[]"):
        results.write_text(text)
        with pytest.raises(SystemExit, match="not a length_buckets results file"):
            bench.main(["--results", str(results)])
        assert results.read_text() == text
    assert calls == []


@pytest.mark.parametrize("argv", [["--skip-throughput"], ["--roles", "teacher"]])
def test_options_that_measure_nothing_stop_before_measuring(stubbed, tmp_path, argv):
    bench, calls, _, _ = stubbed
    with pytest.raises(SystemExit) as stop:
        bench.main(argv + ["--results", str(tmp_path / "r.json")])
    assert stop.value.code == 2 and calls == []
    assert not (tmp_path / "r.json").exists()
