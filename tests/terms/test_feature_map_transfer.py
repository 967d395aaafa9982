import keras
import numpy as np
import pytest
import tensorflow as tf

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.errors import KdplugError
from kdplug.terms import FeatureMapTransfer


def np_feature_map_mse(t, s, mask):
    per_token = ((t - s) ** 2).mean(-1) * mask
    valid = mask.sum(-1)
    return np.where(valid > 0, per_token.sum(-1) / np.maximum(valid, 1), 0.0)


def test_hand_computed_values_with_padding():
    # Example 1: token errors (1+4)/2 = 2.5 and (1+1)/2 = 1; token 3 is
    # padding (error 25 ignored) -> (2.5 + 1) / 2 = 1.75.
    # Example 2: token errors 0, (4+0)/2 = 2, (0+9)/2 = 4.5 -> 6.5 / 3.
    t = np.array([[[1, 2], [0, 0], [5, 5]],
                  [[1, 1], [2, 0], [0, 3]]], "float32")
    s = np.array([[[0, 0], [1, 1], [0, 0]],
                  [[1, 1], [0, 0], [0, 0]]], "float32")
    mask = np.array([[1, 1, 0], [1, 1, 1]], "int32")
    term = FeatureMapTransfer([("hidden/2", "hidden/1")])
    loss = term({"hidden/2": t}, {"hidden/1": s}, {"padding_mask": mask})
    np.testing.assert_allclose(loss, [1.75, 6.5 / 3], rtol=1e-6)


def test_matches_numpy_with_two_pairs_and_masking():
    rng = np.random.default_rng(0)
    t1, t2, s1, s2 = (rng.normal(size=(3, 5, 4)).astype("float32") for _ in range(4))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], "int32")
    term = FeatureMapTransfer([("hidden/1", "hidden/1"), ("hidden/2", "hidden/2")])
    teacher = {"hidden/1": t1, "hidden/2": t2}
    loss = keras.ops.convert_to_numpy(
        term(teacher, {"hidden/1": s1, "hidden/2": s2}, {"padding_mask": mask}))
    expected = np_feature_map_mse(t1, s1, mask) + np_feature_map_mse(t2, s2, mask)
    np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-7)
    assert loss[2] == 0.0  # no valid token
    s1_changed = s1.copy()
    s1_changed[0, 3:] = 100.0  # padded positions do not matter
    loss2 = term(teacher, {"hidden/1": s1_changed, "hidden/2": s2},
                 {"padding_mask": mask})
    np.testing.assert_allclose(loss2, loss, rtol=1e-6)
    same = term(teacher, teacher, {"padding_mask": mask})
    np.testing.assert_array_equal(same, [0.0, 0.0, 0.0])


def test_taps_config_and_errors():
    term = FeatureMapTransfer([["hidden/4", "hidden/2"]], weight=0.5)
    assert term.name == "feature_map_mse"
    assert term.required_teacher_taps() == {"hidden/4"}
    assert term.required_student_taps() == {"hidden/2"}
    clone = FeatureMapTransfer.from_config(term.get_config())
    assert clone.pairs == (("hidden/4", "hidden/2"),)
    assert float(clone.weight.numpy()) == 0.5
    with pytest.raises(KdplugError, match="width"):
        term({"hidden/4": np.ones((1, 2, 4), "float32")},
             {"hidden/2": np.ones((1, 2, 3), "float32")},
             {"padding_mask": np.ones((1, 2), "int32")})
    with pytest.raises(KdplugError, match="padding_mask"):
        term({"hidden/4": np.ones((1, 2, 4), "float32")},
             {"hidden/2": np.ones((1, 2, 4), "float32")}, {})
    with pytest.raises(KdplugError, match="at least one"):
        FeatureMapTransfer([])


def test_same_value_under_xla():
    rng = np.random.default_rng(3)
    t, s = (rng.normal(size=(2, 4, 3)).astype("float32") for _ in range(2))
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], "int32")
    term = FeatureMapTransfer([("hidden/1", "hidden/1")])
    compiled = tf.function(
        lambda t, s, m: term({"hidden/1": t}, {"hidden/1": s}, {"padding_mask": m}),
        jit_compile=True)
    np.testing.assert_allclose(compiled(t, s, mask), np_feature_map_mse(t, s, mask),
                               rtol=1e-5)


def test_layer_norm_by_hand_and_against_numpy():
    # t = [1, 3]: mean 2, var 1 -> LN = [-1, 1] / sqrt(1 + eps)
    # s = [10, 10]: var 0 -> LN = [0, 0]; the scale of s no longer matters
    # loss = mean_n (LN(t) - LN(s))^2 = 1 / (1 + eps)
    eps = 1e-3
    t = np.array([[[1, 3]]], "float32")
    s = np.array([[[10, 10]]], "float32")
    mask = np.array([[1]], "int32")
    term = FeatureMapTransfer([("hidden/1", "hidden/1")], layer_norm=True)
    assert term.epsilon == eps
    loss = term({"hidden/1": t}, {"hidden/1": s}, {"padding_mask": mask})
    np.testing.assert_allclose(loss, [1.0 / (1.0 + eps)], rtol=1e-6)
    # s = 5 t + 7 has t's shape: LN(s) = LN(t) up to eps -> ~0
    loss = term({"hidden/1": t}, {"hidden/1": 5 * t + 7}, {"padding_mask": mask})
    np.testing.assert_allclose(loss, [0.0], atol=1e-3)
    plain = FeatureMapTransfer([("hidden/1", "hidden/1")])
    np.testing.assert_allclose(
        plain({"hidden/1": t}, {"hidden/1": s}, {"padding_mask": mask}),
        [(81 + 49) / 2], rtol=1e-6)

    rng = np.random.default_rng(3)
    t, s = (rng.normal(2.0, 3.0, size=(2, 4, 6)).astype("float32") for _ in range(2))
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], "int32")

    def ln(x):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)

    loss = term({"hidden/1": t}, {"hidden/1": s}, {"padding_mask": mask})
    np.testing.assert_allclose(loss, np_feature_map_mse(ln(t), ln(s), mask), rtol=1e-5)


def test_layer_norm_config_round_trip_and_old_configs():
    term = FeatureMapTransfer([("hidden/1", "hidden/1")], layer_norm=True, epsilon=1e-6)
    config = term.get_config()
    assert (config["layer_norm"], config["epsilon"]) == (True, 1e-6)
    clone = FeatureMapTransfer.from_config(config)
    assert (clone.layer_norm, clone.epsilon) == (True, 1e-6)
    # saved before the option existed: plain MSE, as then
    del config["layer_norm"], config["epsilon"]
    assert FeatureMapTransfer.from_config(config).layer_norm is False
