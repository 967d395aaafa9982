import numpy as np
import pytest

from kdplug.terms import TokenHardCrossEntropy
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test

# one example, four positions, three classes
LOGITS = np.array([[[0.0, 0.0, 0.0],
                    [5.0, 1.0, 1.0],
                    [0.0, np.log(3.0), 0.0],
                    [1.0, 2.0, 3.0]]], "float32")


def test_mean_ce_over_labelled_positions_by_hand():
    # position 0 ([CLS]) and 3 (a continuation piece) are -1
    labels = np.array([[-1, 1, 1, -1]], "int32")
    got = np.asarray(TokenHardCrossEntropy()({}, {"logits": LOGITS},
                                             {"labels": labels}))
    # position 1: -log(e / (e^5 + 2e)) = log(e^4 + 2)
    # position 2: softmax([0, ln 3, 0])[1] = 3/5: -log(3/5)
    expected = (np.log(np.exp(4.0) + 2.0) - np.log(3 / 5)) / 2
    assert got == pytest.approx([expected], rel=1e-5)


def test_example_without_labels_is_zero_and_others_unchanged():
    logits = np.concatenate([LOGITS, LOGITS])
    labels = np.array([[-1, -1, -1, -1], [-1, -1, 1, -1]], "int32")
    got = np.asarray(TokenHardCrossEntropy()({}, {"logits": logits},
                                             {"labels": labels}))
    assert got[0] == 0.0
    assert got[1] == pytest.approx(-np.log(3 / 5), rel=1e-5)


def test_serialisation_round_trip_and_taps():
    term = TokenHardCrossEntropy(weight=0.7, tap="logits", name="tags")
    run_term_test(term, {}, {"logits": np.concatenate([LOGITS, LOGITS[:, ::-1]])},
                  {"labels": np.array([[-1, 1, 1, -1], [0, 2, -1, -1]], "int32")})
    clone = run_serialization_test(term)
    assert clone.name == "tags" and clone.tap == "logits"
    assert float(clone.weight.numpy()) == pytest.approx(0.7)
    assert clone.required_teacher_taps() == set()
    assert clone.required_student_taps() == {"logits"}
