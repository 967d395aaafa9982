import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import testing
from kdplug.errors import KdplugError
from kdplug_plugins.fastbert.early_exit_bert import early_exit_bert
from kdplug_plugins.fastbert.early_exit_classifier import EarlyExitBertClassifier
from kdplug_plugins.fastbert.early_exit_classifier import normalized_entropy
from kdplug_plugins.fastbert.testing import spread_branch_confidences

NUM_LAYERS = 3
# The test branches amplify [CLS] differences ~1000x (see `model`), so float
# rounding between the batched taps and the layer-by-layer path shows up in
# their logits at ~1e-4; the full model's logits are compared at 1e-5.
BRANCH_TOL = dict(rtol=1e-3, atol=1e-3)


@pytest.fixture(scope="module")
def teacher():
    return testing.tiny_bert_classifier(num_layers=NUM_LAYERS, seed=3)


@pytest.fixture(scope="module")
def batch():
    x, _ = testing.toy_batch(batch_size=16, seed=5)
    return x


@pytest.fixture(scope="module", params=["attention", "cls"])
def model(teacher, batch, request):
    m = early_exit_bert(teacher, num_classes=2, branch_dropout=0.0,
                        branch_pooling=request.param)
    # Confidences must vary between examples so that they exit at different
    # layers (see `spread_branch_confidences`).
    return spread_branch_confidences(m, batch)


def all_taps(model, x):
    names = model.branch_tap_names() + ["logits"]
    return {k: v.numpy() for k, v in model.taps(x, names).items()}


def test_structure_copy_and_taps(teacher, model, batch):
    assert len(model.branches) == NUM_LAYERS - 1
    assert model.branch_tap_names() == ["branch_logits/1", "branch_logits/2"]
    assert "branch_logits/2" in model.available_taps()
    assert "branch_logits/3" not in model.available_taps()
    assert model.tap_width("branch_logits/1") == 2
    # The copied classifier reproduces the teacher, without sharing weights.
    np.testing.assert_allclose(model(batch).numpy(), teacher(batch).numpy(),
                               atol=1e-5)
    teacher_ids = {id(v) for v in teacher.weights}
    assert not teacher_ids & {id(v) for v in model.weights}
    taps = model.taps(batch, ["branch_logits/1", "hidden/1", "logits"])
    assert set(taps) == {"branch_logits/1", "hidden/1", "logits"}
    np.testing.assert_allclose(
        taps["branch_logits/1"].numpy(),
        model.branches[0](taps["hidden/1"], batch["padding_mask"]).numpy(), atol=1e-6)
    assert taps["branch_logits/1"].shape == (16, 2)
    with pytest.raises(KdplugError, match="branch_logits/1"):
        model.taps(batch, ["branch_logits/3"])
    assert model.flops_per_example(12) > model.bert.flops_per_example(12)


def test_frozen_bert_runs_in_inference_mode(batch):
    bert = testing.tiny_bert_classifier(num_layers=2, seed=0)
    bert.output_dropout.rate = 0.5
    m = EarlyExitBertClassifier(bert)
    m.bert.trainable = False
    a = m.taps(batch, ["logits"], training=True)["logits"].numpy()
    np.testing.assert_allclose(a, m(batch).numpy(), atol=1e-6)


def test_keras_round_trip(model, batch, tmp_path):
    path = str(tmp_path / "fastbert.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, EarlyExitBertClassifier)
    assert loaded.branch_dim == model.branch_dim == 16
    assert loaded.branch_pooling == model.branch_pooling
    assert [b.pooling for b in loaded.branches] == [model.branch_pooling] * 2
    # the paper's branch by default, and it survives the round trip
    assert model.branch_form == loaded.branch_form == "paper"
    assert [b.form for b in loaded.branches] == ["paper"] * 2
    a, b = all_taps(model, batch), all_taps(loaded, batch)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], atol=1e-5)


@pytest.mark.slow
def test_config_without_branch_form_loads_the_residual_branch(teacher, batch):
    # A model saved before `branch_form` existed (kdplug 0.1) has no key: it
    # is rebuilt with the residual branch it was trained with.
    old = early_exit_bert(teacher, num_classes=2, branch_dropout=0.0,
                          branch_form="residual")
    config = keras.saving.serialize_keras_object(old)
    del config["config"]["branch_form"]
    rebuilt = keras.saving.deserialize_keras_object(config)
    assert rebuilt.branch_form == "residual"
    assert [b.form for b in rebuilt.branches] == ["residual"] * 2
    rebuilt.set_weights(old.get_weights())
    a, b = all_taps(old, batch), all_taps(rebuilt, batch)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], atol=1e-6)
    # today's default is the paper's branch: same weights, other outputs
    paper = early_exit_bert(teacher, num_classes=2, branch_dropout=0.0)
    paper.set_weights(old.get_weights())
    assert not np.allclose(all_taps(paper, batch)["branch_logits/1"],
                           a["branch_logits/1"], atol=1e-4)


@pytest.mark.slow
def test_speed_zero_runs_every_layer(model, batch):
    logits, layers = model.predict_adaptive(batch, 0.0)
    np.testing.assert_allclose(logits, model(batch).numpy(), atol=1e-5)
    assert layers.tolist() == [NUM_LAYERS] * 16


def test_speed_one_exits_at_layer_one(model, batch):
    logits, layers = model.predict_adaptive(batch, 1.0)
    assert layers.tolist() == [1] * 16
    np.testing.assert_allclose(
        logits, all_taps(model, batch)["branch_logits/1"], **BRANCH_TOL)


def mixed_speed(model, x):
    """A threshold between examples' branch-1 uncertainties, away from any."""
    taps = all_taps(model, x)
    u1 = np.asarray(normalized_entropy(taps["branch_logits/1"]))
    u2 = np.asarray(normalized_entropy(taps["branch_logits/2"]))
    candidates = np.sort(np.concatenate([u1, u2]))
    mids = (candidates[1:] + candidates[:-1]) / 2
    gaps = candidates[1:] - candidates[:-1]

    def layers_for(s):
        return np.where(u1 < s, 1, np.where(u2 < s, 2, 3))

    best = max(
        (m for m, g in zip(mids, gaps) if g > 1e-2),
        key=lambda s: (len(set(layers_for(s).tolist())), -abs(s - 0.5)),
    )
    return float(best), layers_for(best), taps


def test_mixed_exits_match_single_examples_and_taps(model, batch):
    speed, expected_layers, taps = mixed_speed(model, batch)
    logits, layers = model.predict_adaptive(batch, speed)
    assert set(layers.tolist()) == {1, 2, 3}  # every depth is used
    assert layers.tolist() == expected_layers.tolist()
    by_layer = {1: "branch_logits/1", 2: "branch_logits/2", 3: "logits"}
    expected = np.stack([taps[by_layer[n]][i] for i, n in enumerate(layers)])
    np.testing.assert_allclose(logits, expected, **BRANCH_TOL)
    for i in range(16):
        one = {k: v[i:i + 1] for k, v in batch.items()}
        l1, n1 = model.predict_adaptive(one, speed)
        assert n1.tolist() == [layers[i]]
        np.testing.assert_allclose(l1[0], logits[i], **BRANCH_TOL)


@pytest.mark.slow
def test_saved_model_export(model, batch, tmp_path):
    speed, expected_layers, _ = mixed_speed(model, batch)
    path = model.export_adaptive(str(tmp_path / "adaptive"))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    inputs = {k: tf.constant(v, tf.int32) for k, v in batch.items()}
    out = serve(speed=tf.constant(speed), **inputs)
    logits, layers = model.predict_adaptive(batch, speed)
    assert out["layers"].numpy().tolist() == layers.tolist()
    np.testing.assert_allclose(out["logits"].numpy(), logits, **BRANCH_TOL)
    out = serve(speed=tf.constant(0.0), **{k: v[:3] for k, v in inputs.items()})
    assert out["layers"].numpy().tolist() == [NUM_LAYERS] * 3


def test_rejects_regression_heads():
    bert = testing.tiny_bert_classifier(num_classes=1, num_layers=2)
    with pytest.raises(KdplugError, match="classes"):
        EarlyExitBertClassifier(bert)
