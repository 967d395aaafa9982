"""Extractive QA terms by hand: soft cross-entropy on the start and end
distributions, the gold-span cross-entropy, and padding left out."""

import numpy as np
import pytest

from kdplug.terms import SpanHardCrossEntropy
from kdplug.terms import SpanSoftCrossEntropy
from kdplug.terms.span_cross_entropy_loss import SpanCrossEntropyLoss
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


def softmax(x, T=1.0):
    e = np.exp(np.asarray(x, "float64") / T)
    return e / e.sum()


# two windows, four positions, (start, end) logits; window 0 has 3 real
# tokens (position 3 is padding), window 1 has 4
T_LOGITS = np.array([[[2.0, 0.0], [0.0, 1.0], [1.0, 3.0], [50.0, 50.0]],
                     [[0.0, 0.0], [3.0, 1.0], [1.0, 2.0], [0.0, 4.0]]], "float32")
S_LOGITS = np.array([[[0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [-50.0, 50.0]],
                     [[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]]], "float32")
# start, end, window id, length
LABELS = np.array([[1, 2, 0, 3], [2, 3, 1, 4]], "int32")


def soft_ce(t, s, T):
    return T * T * -(softmax(t, T) * np.log(softmax(s, T))).sum()


def test_soft_term_by_hand():
    term = SpanSoftCrossEntropy(temperature=2.0)
    got = np.asarray(term({"logits": T_LOGITS}, {"logits": S_LOGITS},
                          {"labels": LABELS}))
    expected = [
        # window 0 reads its first 3 positions only
        (soft_ce([2, 0, 1], [0, 1, 0], 2.0) + soft_ce([0, 1, 3], [1, 0, 0], 2.0)) / 2,
        (soft_ce([0, 3, 1, 0], [1, 2, 0, 0], 2.0)
         + soft_ce([0, 1, 2, 4], [0, 0, 1, 3], 2.0)) / 2]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_hard_term_by_hand():
    term = SpanHardCrossEntropy()
    got = np.asarray(term({}, {"logits": S_LOGITS}, {"labels": LABELS}))
    expected = [
        (-np.log(softmax([0, 1, 0])[1]) - np.log(softmax([1, 0, 0])[2])) / 2,
        (-np.log(softmax([1, 2, 0, 0])[2]) - np.log(softmax([0, 0, 1, 3])[3])) / 2]
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # the teacher's fine-tuning loss: the same, averaged over the batch
    loss = SpanCrossEntropyLoss()(LABELS, S_LOGITS)
    assert float(loss) == pytest.approx(np.mean(expected), rel=1e-5)


def test_padding_and_the_batch_width_change_nothing():
    """A batch cut to its longest window (length buckets) gives the padded
    batch's losses, whatever the padding positions hold."""
    short = np.array([[0, 2, 0, 3], [1, 1, 1, 3]], "int32")
    wide_t = np.concatenate([T_LOGITS[:, :3], np.full((2, 5, 2), 7.0, "float32")], 1)
    wide_s = np.concatenate([S_LOGITS[:, :3], np.full((2, 5, 2), -3.0, "float32")], 1)
    for term in (SpanSoftCrossEntropy(temperature=3.0), SpanHardCrossEntropy()):
        cut = term({"logits": T_LOGITS[:, :3]}, {"logits": S_LOGITS[:, :3]},
                   {"labels": short})
        padded = term({"logits": wide_t}, {"logits": wide_s}, {"labels": short})
        np.testing.assert_allclose(np.asarray(cut), np.asarray(padded), rtol=1e-6)


def test_contract_and_serialisation():
    for term in (SpanSoftCrossEntropy(temperature=2.0, weight=0.3),
                 SpanHardCrossEntropy(weight=0.7)):
        run_term_test(term, {"logits": T_LOGITS}, {"logits": S_LOGITS},
                      {"labels": LABELS}, padding=False)
        clone = run_serialization_test(term)
        assert clone.name == term.name
        assert float(clone.weight.numpy()) == pytest.approx(term.initial_weight)
    assert run_serialization_test(SpanSoftCrossEntropy(temperature=4.0)).initial_temperature == 4.0
