import keras
import numpy as np
import pytest

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug import testing
from kdplug.errors import KdplugError
from kdplug.mapping import Projection
from kdplug.terms import ProjectedHiddenMSE

MASK = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]], "int32")


def np_masked_mse(t, s, mask):
    per_token = ((s - t) ** 2).mean(-1)
    valid = mask.sum(-1)
    return np.where(valid > 0, (per_token * mask).sum(-1) / np.maximum(valid, 1), 0.0)


def test_hand_computed_value_without_projection():
    # example 0: tokens 0, 1 valid: mean_n (s-t)^2 = (1+0)/2 = .5 and (4+4)/2 = 4
    #            -> (0.5 + 4) / 2 = 2.25 (the padded token's 100s are ignored)
    # example 1: token 0 only: (9 + 1)/2 = 5;  example 2: no valid token -> 0
    t = np.zeros((3, 3, 2), "float32")
    s = np.array([[[1, 0], [2, -2], [100, 100]],
                  [[3, 1], [50, 50], [7, 7]],
                  [[9, 9], [9, 9], [9, 9]]], "float32")
    term = ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[(2, 2)])
    assert term.projections == {}
    out = term({"hidden/2": t}, {"hidden/1": s}, {"padding_mask": MASK})
    np.testing.assert_allclose(np.asarray(out), [2.25, 5.0, 0.0], rtol=1e-6)


def test_projection_is_applied_and_pairs_are_summed():
    rng = np.random.default_rng(0)
    t1 = rng.normal(size=(3, 3, 4)).astype("float32")
    t2 = rng.normal(size=(3, 3, 4)).astype("float32")
    s1 = rng.normal(size=(3, 3, 2)).astype("float32")
    s2 = rng.normal(size=(3, 3, 4)).astype("float32")
    term = ProjectedHiddenMSE(
        [("hidden/2", "hidden/1"), ("hidden/4", "hidden/2")],
        widths=[(4, 2), (4, 4)], weight=0.5)
    # a projection only for the width-mismatched pair
    assert list(term.projections) == ["hidden/1"]
    projection = term.projections["hidden/1"]
    assert isinstance(projection, Projection)
    assert (projection.input_dim, projection.output_dim) == (2, 4)
    kernel = rng.normal(size=(2, 4)).astype("float32")
    bias = rng.normal(size=(4,)).astype("float32")
    projection.set_weights([kernel, bias])
    out = term({"hidden/2": t1, "hidden/4": t2}, {"hidden/1": s1, "hidden/2": s2},
               {"padding_mask": MASK})
    expected = np_masked_mse(t1, s1 @ kernel + bias, MASK) + np_masked_mse(t2, s2, MASK)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5)
    assert float(term.weight.numpy()) == 0.5
    # the projection's weights are the term's (trainable) weights
    assert len(term.trainable_weights) == 2


def test_config_round_trip_rebuilds_projections():
    term = ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[(4, 2)],
                              weight=2.0, use_bias=False)
    config = term.get_config()
    assert config["pairs"] == [["hidden/2", "hidden/1"]]
    assert config["widths"] == [[4, 2]]
    clone = ProjectedHiddenMSE.from_config(config)
    assert clone.name == "hidden_mse"
    assert clone.projections["hidden/1"].dense.kernel.shape == (2, 4)
    assert clone.projections["hidden/1"].dense.bias is None
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(term))
    assert isinstance(restored, ProjectedHiddenMSE)
    assert restored.widths == ((4, 2),)


def test_from_models_reads_widths_and_errors():
    teacher = testing.tiny_bert_classifier(num_layers=2, hidden_dim=16)
    student = testing.tiny_bert_classifier(num_layers=1, hidden_dim=8)
    term = ProjectedHiddenMSE.from_models(teacher, student,
                                          [("hidden/2", "hidden/1")])
    assert term.widths == ((16, 8),)
    with pytest.raises(KdplugError, match="student tap"):
        ProjectedHiddenMSE.from_models(teacher, student, [("hidden/2", "hidden/5")])
    with pytest.raises(KdplugError, match="widths"):
        ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[])
    with pytest.raises(KdplugError, match="padding_mask"):
        term({"hidden/2": np.zeros((1, 2, 16), "float32")},
             {"hidden/1": np.zeros((1, 2, 8), "float32")}, {})
