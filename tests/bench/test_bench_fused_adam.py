"""bench/fused_adam.py: the side-by-side timing on the toy model, the
section rendered from a stored measurement, and the swap of
`make_optimizer`'s class for a toy run."""

import json
import statistics

import keras
import pytest

from kdplug.training import optimizers
from kdplug.training.fused_adam_w import FusedAdamW

TOY = "toy BERT (2 layers, width 16)"


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("fused_adam")


@pytest.mark.slow
def test_toy_model_rows_count_the_optimizer_ops(bench):
    rows = bench.bench_steps(rounds=1, steps=1, models=[TOY])
    assert list(rows) == [TOY] and list(rows[TOY]) == ["Keras AdamW", "FusedAdamW"]
    keras_row, fused_row = rows[TOY]["Keras AdamW"], rows[TOY]["FusedAdamW"]
    assert keras_row["variables"] == fused_row["variables"] > 20
    assert fused_row["optimizer_ops"] < 0.5 * keras_row["optimizer_ops"]
    for row in (keras_row, fused_row):
        assert len(row["first_s"]) == len(row["later_s"]) == 1 and len(row["later_s"][0]) == 1
        assert row["first_s"][0] > statistics.median(row["later_s"][0]) > 0


def measurement(toy=True):
    """A stored measurement written by hand: 3 rounds of 3 later steps."""
    return {
        "machine": {"cpu": "test cpu", "cpus": 2, "tensorflow": "2.21.0", "keras": "3.15.1"},
        "settings": {"rounds": 3, "steps": 3, "toy_runs": 3, "batch_size": 32},
        "finished": "2026-11-27T23:59:00+00:00",
        "models": {TOY: {
            "Keras AdamW": {"optimizer_ops": 2000, "variables": 41,
                            "first_s": [4.0, 5.0, 3.0],
                            "later_s": [[0.02, 0.03, 0.01], [0.02, 0.02, 0.05],
                                        [0.04, 0.03, 0.05]]},
            "FusedAdamW": {"optimizer_ops": 500, "variables": 41,
                           "first_s": [2.0, 1.0, 2.5],
                           "later_s": [[0.01, 0.01, 0.03], [0.012, 0.008, 0.01],
                                       [0.02, 0.011, 0.009]]}}},
        "toy_runs_s": {"Keras AdamW": [25.0, 30.0, 24.0], "FusedAdamW": [20.0, 19.0, 22.0]}
        if toy else None,
    }


def test_section_from_a_stored_measurement(bench):
    text = bench.render(measurement())
    assert text.startswith("### FusedAdamW against Keras' AdamW\n\nMeasured 2026-11-27 by "
                           "`python bench/fused_adam.py --rounds 3 --steps 3 --toy-runs 3` "
                           "on 2 CPU core(s) (test cpu), TensorFlow 2.21.0, Keras 3.15.1; ")
    # Keras: first step median of 4, 5, 3 = 4.00 s; later steps: each round's
    # median (0.02, 0.02, 0.04), their median 0.02 s = 20.0 ms (the median of
    # all nine steps would be 0.03)
    assert f"| {TOY} | Keras AdamW | 41 | 2,000 | 4.00 | 20.0 |" in text
    # FusedAdamW: median of 2, 1, 2.5 = 2.00 s; rounds' medians 0.01, 0.01,
    # 0.011: 0.01 s = 10.0 ms
    assert f"| {TOY} | FusedAdamW | 41 | 500 | 2.00 | 10.0 |" in text
    # 500 / 2000 = 0.25, 2.0 / 4.0 = 0.50, 0.01 / 0.02 = 0.50
    assert (f"- {TOY}: graph ops x0.25, first step x0.50, later steps x0.50 "
            "(FusedAdamW / Keras).") in text
    # toy runs: median 25.0 s and 20.0 s, 20 / 25 = 0.80
    assert text.endswith("- The suite's toy `kdplug run` (3 runs each): 25.0 s with Keras' "
                         "AdamW, 20.0 s with FusedAdamW (x0.80).\n")


def test_section_without_toy_runs(bench):
    text = bench.render(measurement(toy=False))
    assert "toy `kdplug run`" not in text and text.endswith("(FusedAdamW / Keras).\n")


def test_render_only_rewrites_the_section_the_measurement_wrote(bench, tmp_path,
                                                                monkeypatch):
    results, page = tmp_path / "fused_adam.json", tmp_path / "performance.md"
    monkeypatch.setattr(bench, "measure", lambda args: measurement())
    bench.main(["--rounds", "3", "--results", str(results), "--write-docs", str(page)])
    assert json.loads(results.read_text()) == measurement()
    written = page.read_text()
    assert "<!-- fused-adam:start -->\n### FusedAdamW against Keras' AdamW" in written
    monkeypatch.setattr(bench, "measure", None)
    page.write_text(written.replace("| 2,000 |", "| 1 |"))
    bench.main(["--render-only", "--results", str(results), "--write-docs", str(page)])
    assert page.read_text() == written



def test_toy_runs_swap_make_optimizers_class_and_restore_it(bench):
    with bench.optimizer_class(bench.keras_adamw):
        adamw = optimizers.make_optimizer("adamw", 1e-3, 10, weight_decay=0.01)
        adam = optimizers.make_optimizer("adam", 1e-3, 10)
    assert type(adamw) is keras.optimizers.AdamW and adamw.weight_decay == 0.01
    assert type(adam) is keras.optimizers.Adam
    assert isinstance(optimizers.make_optimizer("adam", 1e-3, 10), FusedAdamW)
