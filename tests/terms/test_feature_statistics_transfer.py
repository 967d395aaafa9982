import numpy as np
import pytest

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.terms import FeatureStatisticsTransfer
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test

# Two examples of three tokens, width 2; example 1's third token is padding.
T = np.array([[[1, 3], [0, 0], [5, 5]],
              [[2, 2], [4, 0], [1, 1]]], "float32")
S = np.array([[[0, 0], [1, 3], [9, 1]],
              [[2, 2], [1, 1], [0, 4]]], "float32")
MASK = np.array([[1, 1, 0], [1, 1, 1]], "int32")


def test_mean_term_by_hand():
    # token means T: [2, 0, (5)], [2, 2, 1]; S: [0, 2, (5)], [2, 1, 2]
    # example 1: ((0-2)^2 + (2-0)^2) / 2 = 4; padding ignored
    # example 2: (0 + 1 + 1) / 3 = 2/3
    term = FeatureStatisticsTransfer([("hidden/2", "hidden/1")], "mean")
    loss = term({"hidden/2": T}, {"hidden/1": S}, {"padding_mask": MASK})
    np.testing.assert_allclose(loss, [4.0, 2 / 3], rtol=1e-6)


def test_variance_term_by_hand():
    # population variances over the 2 units: T [1, 0, (0)], [0, 4, 0];
    # S [0, 1, (16)], [0, 0, 4]
    # example 1: (|0-1| + |1-0|) / 2 = 1; example 2: (0 + 4 + 4) / 3 = 8/3
    term = FeatureStatisticsTransfer([("hidden/2", "hidden/1")], "variance", weight=5.0)
    assert term.name == "feature_variance"
    loss = term({"hidden/2": T}, {"hidden/1": S}, {"padding_mask": MASK})
    np.testing.assert_allclose(loss, [1.0, 8 / 3], rtol=1e-6)  # unweighted per example


def test_pairs_sum_config_round_trip_and_errors():
    term = FeatureStatisticsTransfer([("hidden/1", "hidden/1"), ("hidden/2", "hidden/2")],
                                     "mean", weight=5000.0)
    taps = {"hidden/1": T, "hidden/2": T}
    loss = term(taps, {"hidden/1": S, "hidden/2": S}, {"padding_mask": MASK})
    np.testing.assert_allclose(loss, [8.0, 4 / 3], rtol=1e-6)
    assert term.required_teacher_taps() == {"hidden/1", "hidden/2"}
    run_term_test(term, taps, {"hidden/1": S, "hidden/2": S}, {"padding_mask": MASK})
    clone = run_serialization_test(term)
    assert clone.statistic == "mean" and float(clone.weight.numpy()) == 5000.0
    same = clone(taps, taps, {"padding_mask": np.zeros((2, 3), "int32")})
    np.testing.assert_array_equal(same, [0.0, 0.0])  # no valid token: zero
    with pytest.raises(ValueError, match="statistic must be one of"):
        FeatureStatisticsTransfer([("hidden/1", "hidden/1")], "std")
