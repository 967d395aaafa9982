"""The hard and soft terms of regression and multi-label tasks, against
numbers computed by hand."""

import math

import numpy as np
import pytest

from kdplug.terms import HardLabelBinaryCrossEntropy
from kdplug.terms import HardLabelMSE
from kdplug.terms import SoftTargetBinaryCrossEntropy
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


def test_hard_label_mse_by_hand_and_nan_targets_contribute_zero():
    s = np.array([[1.5], [-0.5], [2.0]], "float32")
    y = np.array([1.0, 0.5, np.nan], "float32")
    got = np.asarray(HardLabelMSE()({}, {"logits": s}, {"labels": y}))
    np.testing.assert_allclose(got, [0.25, 1.0, 0.0], rtol=1e-6)


def test_hard_label_binary_cross_entropy_by_hand():
    s = np.array([[2.0, -1.0], [0.0, 0.0], [3.0, 3.0]], "float32")
    y = np.array([[1, 0], [0, 1], [-1, -1]], "float32")  # last: no gold set
    got = np.asarray(HardLabelBinaryCrossEntropy()({}, {"logits": s}, {"labels": y}))
    first = -(math.log(sigmoid(2.0)) + math.log(1 - sigmoid(-1.0))) / 2
    second = -(math.log(0.5) + math.log(0.5)) / 2  # = log 2
    np.testing.assert_allclose(got, [first, second, 0.0], rtol=1e-5)


def test_soft_target_binary_cross_entropy_by_hand():
    t = np.array([[2.0, -2.0]], "float32")
    s = np.array([[0.0, 1.0]], "float32")
    T = 2.0
    p = [sigmoid(1.0), sigmoid(-1.0)]          # teacher at T
    q = [sigmoid(0.0), sigmoid(0.5)]           # student at T
    bce = -sum(pi * math.log(qi) + (1 - pi) * math.log(1 - qi) for pi, qi in zip(p, q)) / 2
    term = SoftTargetBinaryCrossEntropy(temperature=T)
    got = float(term({"logits": t}, {"logits": s}, {})[0])
    assert got == pytest.approx(T * T * bce, rel=1e-5)
    # the student matching the teacher scores less than any other student
    same = float(term({"logits": t}, {"logits": t}, {})[0])
    assert same < got


def test_terms_meet_the_term_contract():
    rng = np.random.default_rng(0)
    t, s = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)).astype("float32")
    soft = SoftTargetBinaryCrossEntropy(temperature=3.0, weight=0.4, name="soft")
    run_term_test(soft, {"logits": t}, {"logits": s}, {})
    clone = run_serialization_test(soft)
    assert float(clone.temperature.numpy()) == pytest.approx(3.0)
    assert float(clone.weight.numpy()) == pytest.approx(0.4) and clone.name == "soft"
    for term, logits, labels in (
            (HardLabelMSE(weight=0.25, tap="logits"), s[:, :1],
             np.array([1.0, 0.5, np.nan, -2.0], "float32")),
            (HardLabelBinaryCrossEntropy(weight=0.25, tap="logits"), s,
             np.array([[1, 0], [0, 1], [-1, -1], [1, 1]], "float32"))):
        run_term_test(term, {}, {"logits": logits}, {"labels": labels})
        clone = run_serialization_test(term)
        assert clone.tap == "logits" and float(clone.weight.numpy()) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="temperature"):
        SoftTargetBinaryCrossEntropy(temperature=0.0)
