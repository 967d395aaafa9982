"""bench/fused_adam.py: the side-by-side timing on the toy model, the table
and its ratios, and the swap of `make_optimizer`'s class for a toy run."""

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
    assert set(rows) == {(TOY, "Keras AdamW"), (TOY, "FusedAdamW")}
    keras_row, fused_row = rows[TOY, "Keras AdamW"], rows[TOY, "FusedAdamW"]
    assert keras_row["variables"] == fused_row["variables"] > 20
    assert fused_row["optimizer_ops"] < 0.5 * keras_row["optimizer_ops"]
    assert all(row["first"] > row["later"] > 0 for row in rows.values())


def test_render_gives_the_ratios(bench):
    rows = {(TOY, "Keras AdamW"): {"optimizer_ops": 2000, "variables": 41,
                                   "first": 4.0, "later": 0.02},
            (TOY, "FusedAdamW"): {"optimizer_ops": 500, "variables": 41,
                                  "first": 2.0, "later": 0.01}}
    args = type("Args", (), {"rounds": 3, "steps": 20, "toy_runs": 2})
    text = bench.render(rows, {"Keras AdamW": 25.0, "FusedAdamW": 20.0}, args)
    assert f"| {TOY} | FusedAdamW | 41 | 500 | 2.00 | 10.0 |" in text
    assert "graph ops x0.25, first step x0.50, later steps x0.50" in text
    assert "25.0 s with Keras' AdamW, 20.0 s with FusedAdamW (x0.80)" in text


def test_toy_runs_swap_make_optimizers_class_and_restore_it(bench):
    with bench.optimizer_class(bench.keras_adamw):
        adamw = optimizers.make_optimizer("adamw", 1e-3, 10, weight_decay=0.01)
        adam = optimizers.make_optimizer("adam", 1e-3, 10)
    assert type(adamw) is keras.optimizers.AdamW and adamw.weight_decay == 0.01
    assert type(adam) is keras.optimizers.Adam
    assert isinstance(optimizers.make_optimizer("adam", 1e-3, 10), FusedAdamW)
