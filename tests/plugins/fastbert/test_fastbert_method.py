import os

import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import testing
from kdplug.config import load_config
from kdplug.config import parse
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.plugin.manager import PluginManager
from kdplug.training import FusedAdamW
from kdplug_plugins.fastbert.early_exit_classifier import EarlyExitBertClassifier
from kdplug_plugins.fastbert.fastbert_method import FastBERTMethod
from kdplug_plugins.fastbert.speed_curve import fastbert_curve
from kdplug_plugins.fastbert.speed_curve import markdown_table
from kdplug_plugins.fastbert.testing import spread_branch_confidences
from kdplug_plugins.students.truncated import TruncatedStudent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def teacher():
    t = testing.tiny_bert_classifier(num_layers=3, seed=2)
    t.trainable = False  # as the trainer leaves a fine-tuned teacher
    return t


def build(teacher, **options):
    method = FastBERTMethod(FastBERTMethod.Config(branch_dropout=0.0, **options))
    student = method.build_student(teacher, TruncatedStudent(), num_classes=2)
    return method, student


def test_registered_and_config_validates():
    pm = PluginManager()
    assert pm.methods.get("fastbert") is FastBERTMethod
    cfg = load_config(os.path.join(ROOT, "configs", "fastbert.yaml"))
    assert cfg.method.name == "fastbert"
    assert cfg.method_config.branch_dim == 128
    assert cfg.method_config.data == "unlabelled"
    assert cfg.method_config.curve_batch_sizes is None
    assert cfg.method_config.branch_form == "paper"
    assert FastBERTMethod.Config().branch_form == "paper"
    for bad, message in (
            ({"branch_form": "tanh"}, "method.branch_form: must be one of 'paper'"),
            ({"branch_dim": 0}, r"method.branch_dim: must be >= 1 \(got 0\)"),
            ({"curve_speeds": [0.5, 1.5]},
             r"method.curve_speeds\[1\]: must be in \[0, 1\] \(got 1.5\)"),
            ({"curve_speeds": []}, "method.curve_speeds: must list at least one"),
            ({"curve_batch_sizes": [0]}, r"method.curve_batch_sizes\[0\]: must be >= 1"),
            ({"branch_dim": 6, "branch_heads": 4},
             r"method.branch_heads: must divide branch_dim \(6\) \(got 4\)")):
        with pytest.raises(ConfigError, match=message):
            parse(FastBERTMethod.Config, bad, "method")


@pytest.mark.slow
def test_student_is_a_trainable_copy_of_the_teacher(teacher):
    method, student = build(teacher, branch_dim=8)
    assert isinstance(student, EarlyExitBertClassifier)
    assert student.branches[0].hidden_dim == 8
    assert [b.form for b in student.branches] == ["paper"] * len(student.branches)
    _, residual = build(teacher, branch_dim=8, branch_form="residual")
    assert {b.form for b in residual.branches} == {"residual"}
    assert not student.non_trainable_weights  # frozen teacher config not reused
    for a, b in zip(teacher.weights, student.bert.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(KdplugError, match="classes"):
        method.build_student(teacher, TruncatedStudent(), num_classes=3)
    (stage,) = method.stages(teacher, student)
    assert stage.name == "self_distill" and stage.data == "unlabelled"
    (term,) = stage.terms
    assert term.name == "self_distill"
    assert term.required_teacher_taps() == set()
    assert term.required_student_taps() == {
        "logits", "branch_logits/1", "branch_logits/2"}


@pytest.mark.slow
def test_self_distillation_trains_only_the_branches(teacher):
    method, student = build(teacher)
    (stage,) = method.stages(teacher, student)
    student.trainable = True
    stage.trainable(student)
    assert not student.bert.trainable
    assert all(b.trainable for b in student.branches)
    bert_before = [w.numpy().copy() for w in student.bert.weights]
    branch_before = [w.numpy().copy() for b in student.branches for w in b.weights]
    x, _ = testing.toy_arrays(num_examples=64, seed=1)
    unlabelled = np.full(64, -1, "int32")  # labels are not used
    ds = tf.data.Dataset.from_tensor_slices((x, unlabelled)).batch(16)
    # No teacher model: the term reads the frozen final classifier's logits
    # from the student's own taps.
    distiller = Distiller(student, None, stage.terms)
    distiller.compile(optimizer=FusedAdamW(1e-2, weight_decay=0.0))
    history = distiller.fit(ds, epochs=6, verbose=0, shuffle=False).history
    losses = history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    for a, w in zip(bert_before, student.bert.weights):
        np.testing.assert_array_equal(a, w.numpy())
    branch_weights = [w for b in student.branches for w in b.weights]
    # Every branch weight trains. With the paper's tanh after the projection
    # (inputs of the attention ~0.02 at BERT's initialisation) the scores
    # q.k are second-order small, so the query / key weights move by ~1e-8
    # only in these few steps: they must move, not by much.
    for a, w in zip(branch_before, branch_weights):
        if w.path.split("/")[-2] in ("query", "key"):
            assert not np.array_equal(a, w.numpy()), w.path
        else:
            assert not np.allclose(a, w.numpy()), w.path
    # The branches now agree with the final classifier on most examples.
    taps = student.taps(x, ["branch_logits/2", "logits"])
    agree = np.mean(np.argmax(taps["branch_logits/2"], -1)
                    == np.argmax(taps["logits"], -1))
    assert agree >= 0.9


@pytest.fixture
def spread_student(teacher):
    """A student whose branch confidences vary between the `toy_arrays(48,
    seed=4)` examples, so they exit at different layers."""
    _, student = build(teacher)
    x, y = testing.toy_arrays(num_examples=48, seed=4)
    return spread_branch_confidences(student, x), x, y


@pytest.mark.slow
def test_speed_curve(spread_student, tmp_path):
    student, x, y = spread_student
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    speeds = [0.0, 0.2, 0.5, 0.8, 1.0]
    result = fastbert_curve(student, ds, speeds=speeds, output_dir=str(tmp_path))
    rows = result["rows"]
    assert [r["speed"] for r in rows] == speeds
    assert result["batch_sizes"] == [16]
    layers = [r["avg_layers"] for r in rows]
    assert layers[0] == 3.0 and layers[-1] == 1.0
    assert all(a >= b for a, b in zip(layers, layers[1:]))
    assert 1.0 < layers[2] < 3.0
    assert result["full"]["avg_layers"] == 3.0
    # Speed 0 is the full model.
    assert rows[0]["accuracy"] == pytest.approx(result["full"]["accuracy"])
    for r in [result["full"], *rows]:
        assert 0.0 <= r["accuracy"] <= 1.0 and r["examples_per_s"] > 0
    assert all(r["speedup"] > 0 for r in rows)
    png, md = result["paths"]["png"], result["paths"]["markdown"]
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    table = open(md).read()
    assert "| full model |" in table and table.count("\n| 0.") == 4
    assert "| 1.00 |" in table


@pytest.mark.slow
def test_speed_curve_at_several_batch_sizes(spread_student, tmp_path):
    student, x, y = spread_student
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    one = fastbert_curve(student, ds, speeds=[0.0, 0.5, 1.0])
    result = fastbert_curve(student, ds, speeds=[0.0, 0.5, 1.0],
                            batch_sizes=[16, 5], rounds=2,
                            output_dir=str(tmp_path))
    assert result["batch_sizes"] == [16, 5]
    # Re-batching changes the speed, not the examples' exits.
    for a, b in zip(one["rows"], result["rows"]):
        assert a["avg_layers"] == b["avg_layers"]
        assert a["accuracy"] == b["accuracy"]
    for r in [result["full"], *result["rows"]]:
        assert set(r["throughput"]) == {"16", "5"}
        assert all(t["examples_per_s"] > 0 and t["speedup"] > 0
                   for t in r["throughput"].values())
        assert r["examples_per_s"] == r["throughput"]["16"]["examples_per_s"]
    assert result["full"]["throughput"]["5"]["speedup"] == pytest.approx(1.0)
    table = markdown_table(result)
    assert "| examples/s (batch 16) | speed-up (batch 16) | examples/s (batch 5) |" in table
    assert table.splitlines()[1] == "|---|---|---|---|---|---|---|"
    assert table.splitlines()[2].startswith("| full model |")
    assert table.splitlines()[2].endswith("| 1.00x |")


# `kdplug run` with fastbert end to end (fine-tuned teacher, self-distillation,
# the speed curve, the saved early-exit student): bench/fastbert.py's smoke run,
# tests/bench/test_bench_fastbert.py.
