import numpy as np
import pytest

from kdplug.terms import HardLabelCrossEntropy


def test_matches_hand_computed_values_and_masks_unlabelled():
    s = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 3.0]], "float32")
    labels = np.array([0, 0, -1], "int32")
    got = np.asarray(HardLabelCrossEntropy()({}, {"logits": s}, {"labels": labels}))
    expected0 = -np.log(np.exp(2) / (np.exp(2) + 1))
    expected1 = -np.log(1 / (1 + np.e))
    np.testing.assert_allclose(got, [expected0, expected1, 0.0], rtol=1e-5)


def test_reads_no_teacher_output():
    term = HardLabelCrossEntropy()
    assert term.required_teacher_taps() == set()
    assert term.required_student_taps() == {"logits"}
    assert HardLabelCrossEntropy.from_config(term.get_config()).name == "hard_ce"


@pytest.mark.parametrize("weight", [0.0, 0.25])
def test_weight_is_a_non_trainable_variable(weight):
    term = HardLabelCrossEntropy(weight=weight)
    assert float(term.weight.numpy()) == weight
    assert not term.trainable_weights
