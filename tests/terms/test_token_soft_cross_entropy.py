import numpy as np
import pytest

from kdplug.terms import TokenSoftCrossEntropy
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


def soft_ce(t, s, T):
    """T^2 * sum_c softmax(t/T)_c * -log softmax(s/T)_c of one position."""
    p = np.exp(np.asarray(t) / T) / np.exp(np.asarray(t) / T).sum()
    q = np.exp(np.asarray(s) / T) / np.exp(np.asarray(s) / T).sum()
    return T * T * -(p * np.log(q)).sum()


# two examples, three positions, two classes
T_LOGITS = np.array([[[2.0, 0.0], [0.0, 0.0], [9.0, -9.0]],
                     [[1.0, 3.0], [4.0, 0.0], [0.0, 2.0]]], "float32")
S_LOGITS = np.array([[[0.0, 0.0], [1.0, -1.0], [-9.0, 9.0]],
                     [[0.0, 0.0], [0.0, 4.0], [2.0, 0.0]]], "float32")


def test_mean_over_labelled_positions_by_hand():
    # example 0 reads positions 0 and 1 (2 is padding, -1);
    # example 1 reads position 1 only ([CLS] and a continuation piece are -1)
    labels = np.array([[0, 1, -1], [-1, 0, -1]], "int32")
    term = TokenSoftCrossEntropy(temperature=2.0)
    got = np.asarray(term({"logits": T_LOGITS}, {"logits": S_LOGITS},
                          {"labels": labels}))
    # example 0, position 0: p = softmax([1, 0]), q = [1/2, 1/2]:
    #   4 * (p0 + p1) * ln 2 = 4 ln 2
    # position 1: p = [1/2, 1/2], q = softmax([.5, -.5]):
    #   4 * (-(1/2) ln q0 - (1/2) ln q1) = -2 (ln q0 + ln q1)
    q0 = np.exp(0.5) / (np.exp(0.5) + np.exp(-0.5))
    first = 4 * np.log(2.0)
    second = -2 * (np.log(q0) + np.log(1 - q0))
    assert got[0] == pytest.approx((first + second) / 2, rel=1e-5)
    # example 1, position 1: p = softmax([2, 0]), q = softmax([0, 2])
    assert got[1] == pytest.approx(soft_ce([4.0, 0.0], [0.0, 4.0], 2.0), rel=1e-5)


def test_label_value_does_not_matter_and_unlabelled_example_is_zero():
    term = TokenSoftCrossEntropy(temperature=1.0)
    a = term({"logits": T_LOGITS}, {"logits": S_LOGITS},
             {"labels": np.array([[0, -1, -1], [-1, -1, -1]])})
    b = term({"logits": T_LOGITS}, {"logits": S_LOGITS},
             {"labels": np.array([[1, -1, -1], [-1, -1, -1]])})
    np.testing.assert_allclose(np.asarray(a), np.asarray(b))
    assert float(a[0]) == pytest.approx(soft_ce([2.0, 0.0], [0.0, 0.0], 1.0), rel=1e-5)
    assert float(a[1]) == 0.0


def test_serialisation_round_trip():
    term = TokenSoftCrossEntropy(temperature=3.0, weight=0.4, tap="logits")
    run_term_test(term, {"logits": T_LOGITS}, {"logits": S_LOGITS},
                  {"labels": np.array([[0, 1, -1], [-1, 0, -1]], "int32")})
    term.temperature.assign(1.0)  # schedules change the variable, not the config
    clone = run_serialization_test(term)
    assert clone.name == "token_soft_ce"
    assert float(clone.weight.numpy()) == pytest.approx(0.4)
    assert float(clone.temperature.numpy()) == pytest.approx(3.0)
    assert clone.required_teacher_taps() == clone.required_student_taps() == {"logits"}
    with pytest.raises(ValueError, match="temperature"):
        TokenSoftCrossEntropy(temperature=-1.0)
