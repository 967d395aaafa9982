import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import testing
from kdplug.config import load_config
from kdplug.errors import KdplugError
from kdplug.fastbert_curve import fastbert_curve
from kdplug.models import EarlyExitBertClassifier
from kdplug.plugins import PluginManager
from kdplug_plugins.fastbert.fastbert_method import FastBERTMethod
from kdplug_plugins.students.truncated import TruncatedStudent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    with pytest.raises(ValueError):
        FastBERTMethod.Config(branch_dim=0)


def test_student_is_a_trainable_copy_of_the_teacher(teacher):
    method, student = build(teacher, branch_dim=8)
    assert isinstance(student, EarlyExitBertClassifier)
    assert student.branches[0].hidden_dim == 8
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
    distiller.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = distiller.fit(ds, epochs=6, verbose=0, shuffle=False).history
    losses = history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    for a, w in zip(bert_before, student.bert.weights):
        np.testing.assert_array_equal(a, w.numpy())
    changed = [not np.allclose(a, w.numpy())
               for a, w in zip(branch_before,
                               [w for b in student.branches for w in b.weights])]
    assert all(changed)
    # The branches now agree with the final classifier on most examples.
    taps = student.taps(x, ["branch_logits/2", "logits"])
    agree = np.mean(np.argmax(taps["branch_logits/2"], -1)
                    == np.argmax(taps["logits"], -1))
    assert agree >= 0.9


def test_speed_curve(teacher, tmp_path):
    _, student = build(teacher)
    # Make branch confidences vary between examples (see the model tests).
    x, y = testing.toy_arrays(num_examples=48, seed=4)
    names = ["cls/1", "cls/2"]
    cls = student.taps(x, names)
    rng = np.random.default_rng(0)
    for branch, name in zip(student.branches, names):
        c = cls[name].numpy()
        w = rng.normal(size=(c.shape[1], branch.hidden_dim))
        w /= c.std(0).mean() * np.sqrt(c.shape[1])
        branch.dense.set_weights([w.astype("float32"),
                                  (-c.mean(0) @ w).astype("float32")])
        k, b = branch.out.get_weights()
        branch.out.set_weights([rng.normal(0, 2.0, k.shape).astype("float32"), b])
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    speeds = [0.0, 0.2, 0.5, 0.8, 1.0]
    result = fastbert_curve(student, ds, speeds=speeds, output_dir=str(tmp_path))
    rows = result["rows"]
    assert [r["speed"] for r in rows] == speeds
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
def test_kdplug_run_end_to_end(tmp_path):
    import yaml

    from kdplug.train import Experiment

    preset = testing.write_tiny_preset(tmp_path / "teacher", num_layers=2)
    data = testing.write_toy_tsv(tmp_path / "toy.tsv", num_examples=160)
    doc = {
        "name": "toy",
        "output_dir": str(tmp_path / "runs" / "{name}"),
        "data": {"path": data, "sequence_length": 16},
        "teacher": {"source": preset, "finetune": {"epochs": 1, "batch_size": 16,
                                                   "learning_rate": 3e-3}},
        "method": {"name": "fastbert", "branch_dim": 8},
        "training": {"epochs": 2, "batch_size": 16, "learning_rate": 3e-3,
                     "jit_compile": False, "verbose": 0},
    }
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(doc))
    report = Experiment(load_config(str(path)), log=lambda *_: None).run()
    loss = report["history"]["self_distill"]["loss"]
    assert loss[-1] < loss[0]
    curve = report["method_evaluation"]["fastbert_curve"]
    assert os.path.isfile(curve["paths"]["png"])
    avg_layers = [row["avg_layers"] for row in curve["rows"]]
    assert avg_layers == sorted(avg_layers, reverse=True)
    # The backbone and final classifier are the fine-tuned teacher's, frozen.
    assert report["student"]["accuracy"] == pytest.approx(
        report["teacher"]["accuracy"])
    saved = keras.saving.load_model(str(tmp_path / "runs" / "toy" / "student.keras"))
    assert isinstance(saved, EarlyExitBertClassifier)
    x, _ = testing.toy_batch(4, vocabulary_size=20)
    logits, layers = saved.predict_adaptive(x, 0.0)
    assert logits.shape == (4, 2) and layers.tolist() == [2, 2, 2, 2]
