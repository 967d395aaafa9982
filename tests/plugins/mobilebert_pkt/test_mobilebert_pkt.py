import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.training import FusedAdamW
from kdplug_plugins.mobilebert_pkt.mobilebert_pkt_method import MobileBertPKTMethod
from kdplug_plugins.mobilebert_pkt.selectors import set_trainable
from kdplug_plugins.mobilebert_pkt.selectors import student_parts
from kdplug_plugins.mobilebert_pkt.selectors import train_all
from kdplug_plugins.mobilebert_pkt.selectors import train_body
from kdplug_plugins.students.bottleneck import BottleneckStudent
from kdplug_plugins.students.narrow import NarrowStudent
from kdplug_plugins.students.truncated import TruncatedStudent

BATCH = testing.toy_dataset(num_examples=8, batch_size=8, seed=2)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

TINY_BOTTLENECK = dict(preset="tiny", intra_dim=8, num_heads=2, intermediate_dim=16,
                       num_feedforward=1, embedding_dim=8, dropout=0.0)


@pytest.fixture(scope="module")
def teacher():
    return testing.tiny_bert_classifier(num_layers=2, hidden_dim=16, num_heads=2,
                                        seed=1)


def make_student(teacher, **overrides):
    keras.utils.set_random_seed(3)
    config = BottleneckStudent.Config(**{**TINY_BOTTLENECK, **overrides})
    return BottleneckStudent(config).build(teacher, num_classes=2)


def make_method(**options):
    return MobileBertPKTMethod(MobileBertPKTMethod.Config(**options))


def snapshot(model):
    return {id(w): np.array(w.numpy()) for w in model.weights}


def ids(variables):
    return {id(v) for v in variables}


def part_weights(layers):
    return [w for layer in layers for w in layer.weights]


def run(stage, student, teacher, steps=3, learning_rate=1e-2):
    """What kdplug.run.StageRunner does for a stage (reset, select, fit), on one fixed
    batch so that the per-step losses are comparable."""
    student.trainable = True
    if stage.trainable is not None:
        stage.trainable(student)
    distiller = Distiller(student, teacher, stage.terms)
    # Eager: a few steps of a tiny model cost less than tracing the step.
    distiller.compile(optimizer=FusedAdamW(learning_rate, weight_decay=0.0),
                      run_eagerly=True)
    history = distiller.fit(BATCH, epochs=steps, verbose=0, shuffle=False).history
    return distiller, history


def test_stages_of_each_variant(teacher):
    student = make_student(teacher)
    method = make_method(layer_epochs=2, distill_epochs=3, layer_learning_rate=1e-3,
                         alpha=0.5, temperature=2.0, feature_map_weight=3.0,
                         attention_weight=0.5, mean_weight=7.0, variance_weight=0.0)
    stages = method.stages(teacher, student)
    assert [s.name for s in stages] == ["layer_1", "layer_2", "distill"]
    for layer, stage in enumerate(stages[:2], start=1):
        fmt, mean, at = stage.terms  # variance_weight 0: no variance term
        assert (fmt.name, mean.name, at.name) == (
            "feature_map_mse", "feature_mean", "attention_kl")
        assert fmt.pairs == ((f"hidden/{layer}", f"hidden/{layer}"),)
        assert mean.pairs == fmt.pairs
        assert at.pairs == ((f"attention/{layer}", f"attention/{layer}"),)
        # the reference divides stage l's loss by l (its `stage_id + 1`)
        assert [float(t.weight.numpy()) for t in (fmt, mean, at)] == pytest.approx(
            [3.0 / layer, 7.0 / layer, 0.5 / layer])
        # the reference code's layer-normalised feature-map MSE, by default
        assert fmt.layer_norm is True
        assert (stage.epochs, stage.learning_rate) == (2, 1e-3)
        assert callable(stage.trainable)
    soft, hard = stages[2].terms
    assert (soft.name, hard.name) == ("soft_ce", "hard_ce")
    assert float(soft.temperature.numpy()) == 2.0
    assert stages[2].trainable is train_all and stages[2].epochs == 3

    (aux,) = make_method(variant="auxiliary").stages(teacher, student)
    assert aux.name == "auxiliary" and aux.trainable is train_all
    assert [t.name for t in aux.terms] == ["feature_map_mse", "feature_mean",
                                           "feature_variance", "attention_kl", "soft_ce"]
    # the reference's weights by default: hidden 100, beta 5000, gamma 5, attention 1
    assert [float(t.weight.numpy()) for t in aux.terms[:4]] == [100.0, 5000.0, 5.0, 1.0]
    assert aux.terms[0].pairs == (("hidden/1", "hidden/1"), ("hidden/2", "hidden/2"))
    assert aux.terms[3].pairs == (("attention/1", "attention/1"),
                                  ("attention/2", "attention/2"))

    joint, distill = make_method(variant="joint-then-task").stages(teacher, student)
    assert (joint.name, distill.name) == ("joint", "distill")
    assert [t.name for t in joint.terms] == ["feature_map_mse", "feature_mean",
                                             "feature_variance", "attention_kl"]
    assert [t.name for t in distill.terms] == ["soft_ce"]
    assert joint.trainable is train_body and distill.trainable is train_all

    # lower_layers: freeze (kdplug 0.2): the weights as configured
    frozen = make_method(lower_layers="freeze", feature_map_weight=3.0)
    assert [float(s.terms[0].weight.numpy())
            for s in frozen.stages(teacher, student)[:2]] == [3.0, 3.0]

    # feature_map_norm: none: kdplug 0.1's raw MSE
    (layer_1, *_) = make_method(feature_map_norm="none").stages(teacher, student)
    assert layer_1.terms[0].layer_norm is False

    # Only the attention term when the feature-map weight is 0.
    (layer_1, *_) = make_method(feature_map_weight=0.0, mean_weight=0.0,
                                variance_weight=0.0).stages(teacher, student)
    assert [t.name for t in layer_1.terms] == ["attention_kl"]


def test_uniform_layer_map_for_a_shallower_student():
    deep = testing.tiny_bert_classifier(num_layers=4, hidden_dim=16, num_heads=2, seed=1)
    student = make_student(deep, num_layers=2)
    method = make_method()
    assert method.layer_map(deep, student) == [(2, 1), (4, 2)]
    stages = method.stages(deep, student)
    assert stages[1].terms[0].pairs == (("hidden/4", "hidden/2"),)
    distiller = Distiller(student, deep, stages[1].terms)
    assert distiller.teacher_tap_names == ["attention/4", "hidden/4"]


@pytest.mark.slow
def test_progressive_stages_train_their_block_and_the_layers_below(teacher):
    """The reference code (`if_freeze_previous_layers: false`): stage l trains
    the embeddings and blocks 1..l; blocks above and the head stay as they
    were."""
    student = make_student(teacher)
    parts = student_parts(student)
    stages = make_method(alpha=0.5).stages(teacher, student)
    for layer, stage in enumerate(stages[:2], start=1):
        before = snapshot(student)
        distiller, history = run(stage, student, teacher)
        trained = ids(part_weights(parts["embeddings"] + parts["blocks"][:layer]))
        assert ids(distiller.trainable_variables) == trained
        after = snapshot(student)
        changed = {id(w) for w in student.weights
                   if not np.array_equal(before[id(w)], after[id(w)])}
        assert ids(part_weights(parts["blocks"][:layer])) <= changed <= trained
        assert history["loss"][-1] < history["loss"][0], (layer, history["loss"])


@pytest.mark.slow
def test_progressive_stages_freeze_everything_but_their_block(teacher):
    student = make_student(teacher)
    parts = student_parts(student)
    stages = make_method(alpha=0.5, lower_layers="freeze").stages(teacher, student)
    x, y = next(iter(BATCH))
    for layer, stage in enumerate(stages[:2], start=1):
        before = snapshot(student)
        distiller, history = run(stage, student, teacher)
        block = parts["blocks"][layer - 1]
        trained = ids(part_weights([block] + (parts["embeddings"] if layer == 1 else [])))
        below = ids(part_weights(parts["blocks"][:layer - 1]
                                 + (parts["embeddings"] if layer > 1 else [])))
        # Exactly block l (and in stage 1 the embeddings) is trainable, so only
        # those variables reach the optimizer.
        assert ids(distiller.trainable_variables) == trained
        assert ids(student.trainable_weights) == trained
        after = snapshot(student)
        for w in student.weights:
            if id(w) in trained:
                assert not np.array_equal(before[id(w)], after[id(w)]), w.path
            else:  # frozen: bit-for-bit unchanged
                np.testing.assert_array_equal(before[id(w)], after[id(w)], w.path)
        # Gradients of the stage loss w.r.t. every student weight: blocks
        # above l and the head are unused (None); blocks below l do shape the
        # loss but are frozen, so the Distiller never computes or applies
        # theirs (checked above: not in trainable_variables, unchanged).
        with tf.GradientTape() as tape:
            tape.watch([w.value for w in student.weights])
            total, *_ = distiller.compute_terms(x, y, None, training=True)
        grads = tape.gradient(total, [w.value for w in student.weights])
        for w, g in zip(student.weights, grads):
            expect = id(w) in trained or id(w) in below
            assert (g is not None) == expect, (layer, w.path)
        for name in ("loss", "feature_map_mse", "attention_kl"):
            assert np.isfinite(history[name]).all()
            assert history[name][-1] < history[name][0], (layer, name, history[name])
    # The final stage trains everything.
    distiller, history = run(stages[2], student, teacher, learning_rate=3e-3)
    assert ids(distiller.trainable_variables) == ids(student.weights)
    assert history["loss"][-1] < history["loss"][0]


def test_stage_selectors_do_not_depend_on_the_previous_stage(teacher):
    """Keras' `model.trainable = True` is a no-op on a model that is already
    trainable (it does not reach frozen sublayers), so every selector sets
    every part explicitly."""
    student = make_student(teacher)
    parts = student_parts(student)
    stages = make_method(lower_layers="freeze").stages(teacher, student)
    stages[1].trainable(student)  # block 2 only
    student.trainable = True  # what kdplug.run.StageRunner does between stages
    stages[0].trainable(student)
    assert ids(student.trainable_weights) == ids(
        part_weights(parts["embeddings"] + parts["blocks"][:1]))
    stages[2].trainable(student)  # distill: everything
    assert ids(student.trainable_weights) == ids(student.weights)


@pytest.mark.parametrize("variant", ["auxiliary", "joint-then-task"])
def test_one_shot_variants_train(teacher, variant):
    student = make_student(teacher)
    stages = make_method(variant=variant, alpha=0.5).stages(teacher, student)
    head = part_weights(student_parts(student)["head"])
    first = stages[0]
    before = snapshot(student)
    _, history = run(first, student, teacher)
    # (soft_ce against the random tiny teacher's near-uniform targets starts
    # at its floor, so only the layer-wise terms and the total must fall)
    for name in ("loss", "feature_map_mse", "attention_kl"):
        assert history[name][-1] < history[name][0], (name, history[name])
    if variant == "joint-then-task":
        # The joint stage's losses never reach the head; it stays frozen.
        for w in head:
            np.testing.assert_array_equal(before[id(w)], w.numpy())
        _, history = run(stages[1], student, teacher, learning_rate=3e-3)
        assert history["loss"][-1] < history["loss"][0]
    else:
        for w in head:
            assert not np.array_equal(before[id(w)], w.numpy()), w.path


def test_selectors_cover_bert_students(teacher):
    student = TruncatedStudent(TruncatedStudent.Config(
        layers="first_k", num_layers=2, dropout=0.0)).build(teacher, 2)
    parts = student_parts(student)
    assert len(parts["blocks"]) == 2
    set_trainable(student, blocks=[2])
    assert ids(student.trainable_weights) == ids(parts["blocks"][1].weights)
    train_all(student)
    assert ids(student.trainable_weights) == ids(student.weights)
    with pytest.raises(KdplugError, match="do not exist"):
        set_trainable(student, blocks=[3])
    # A truncated student keeps the teacher's width: the method accepts it.
    assert len(make_method().stages(teacher, student)) == 3


def test_errors_before_training(teacher):
    method = make_method()
    with pytest.raises(KdplugError, match="only 2"):
        method.stages(teacher, make_student(teacher, num_layers=3))
    narrow = NarrowStudent(NarrowStudent.Config(
        num_layers=2, hidden_dim=8, intermediate_dim=16, num_heads=2)).build(teacher, 2)
    with pytest.raises(KdplugError, match="bottleneck"):
        method.stages(teacher, narrow)
    four_heads = make_student(teacher, num_heads=4)
    with pytest.raises(KdplugError, match="head reduction"):
        make_method(head_reduction=None).stages(teacher, four_heads)
    (stage, *_) = make_method(head_reduction="group").stages(teacher, four_heads)
    assert stage.terms[-1].head_reduction == "group"  # the attention term


def test_config_validates():
    config = load_config(os.path.join(ROOT, "configs", "mobilebert_pkt.yaml"))
    assert config.method.name == "mobilebert-pkt"
    assert config.student.name == "bottleneck"
    assert config.method_config.variant == "progressive"
    assert config.method_config.feature_map_norm == "layer"
    assert (config.method_config.feature_map_weight, config.method_config.mean_weight,
            config.method_config.variance_weight) == (100.0, 5000.0, 5.0)
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}
    config = config_from_dict({**base, "method": {"name": "mobilebert-pkt"}})
    assert config.student.name == "bottleneck"
    assert config.method_config.head_reduction == "group"
    assert config.method_config.feature_map_norm == "layer"
    with pytest.raises(ConfigError, match="feature_map_norm"):
        config_from_dict({**base, "method": {"name": "mobilebert-pkt",
                                             "feature_map_norm": "batch"}})
    with pytest.raises(ConfigError, match="method.variant"):
        config_from_dict({**base, "method": {"name": "mobilebert-pkt",
                                             "variant": "greedy"}})
    with pytest.raises(ConfigError, match="nothing to transfer"):
        config_from_dict({**base, "method": {"name": "mobilebert-pkt",
                                             "feature_map_weight": 0,
                                             "attention_weight": 0}})
