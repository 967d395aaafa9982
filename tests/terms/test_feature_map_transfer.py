import numpy as np

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.terms import FeatureMapTransfer
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


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
    # (against numpy on random states with two pairs: test_paired_terms.py)


def test_term_contract_under_xla_too():
    rng = np.random.default_rng(3)
    t, s = (rng.normal(size=(2, 4, 3)).astype("float32") for _ in range(2))
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], "int32")
    run_term_test(FeatureMapTransfer([("hidden/1", "hidden/1")]), {"hidden/1": t},
                  {"hidden/1": s}, {"padding_mask": mask},
                  expected=np_feature_map_mse(t, s, mask))


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

    run_term_test(term, {"hidden/1": t}, {"hidden/1": s}, {"padding_mask": mask},
                  expected=np_feature_map_mse(ln(t), ln(s), mask))


def test_layer_norm_config_round_trip_and_old_configs():
    term = FeatureMapTransfer([("hidden/1", "hidden/1")], layer_norm=True, epsilon=1e-6)
    config = term.get_config()
    assert (config["layer_norm"], config["epsilon"]) == (True, 1e-6)
    clone = run_serialization_test(term)
    assert (clone.layer_norm, clone.epsilon) == (True, 1e-6)
    # saved before the option existed: plain MSE, as then
    del config["layer_norm"], config["epsilon"]
    assert FeatureMapTransfer.from_config(config).layer_norm is False
