import numpy as np
import pytest

from kdplug.terms import HardLabelCrossEntropy
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


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
    assert run_serialization_test(term).name == "hard_ce"


@pytest.mark.parametrize("weight", [0.0, 0.25])
def test_weight_is_a_non_trainable_variable(weight):
    term = HardLabelCrossEntropy(weight=weight)
    assert float(term.weight.numpy()) == weight
    assert not term.trainable_weights


def test_teacher_argmax_labels_the_unlabelled_rows_by_hand():
    # Rows 0, 1 labelled (teacher ignored), rows 2, 3 unlabelled: their
    # label is the teacher's argmax, 1 for row 2 and 0 for row 3.
    s = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0], [0.5, 0.0]], "float32")
    t = np.array([[-5.0, 5.0], [5.0, -5.0], [0.1, 0.2], [4.0, -1.0]], "float32")
    labels = np.array([0, 0, -1, -1], "int32")
    term = HardLabelCrossEntropy(unlabelled="teacher_argmax")
    got = np.asarray(term({"logits": t}, {"logits": s}, {"labels": labels}))
    expected = [
        np.log(1 + np.exp(-2.0)),        # -log softmax([2, 0])[0]
        np.log(1 + np.e),                # -log softmax([0, 1])[0]
        np.log(1 + np.exp(-2.0)),        # -log softmax([1, 3])[1], teacher says 1
        np.log(1 + np.exp(-0.5)),        # -log softmax([.5, 0])[0], teacher says 0
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # The default skips the same rows.
    skip = np.asarray(HardLabelCrossEntropy()({"logits": t}, {"logits": s},
                                              {"labels": labels}))
    np.testing.assert_allclose(skip, expected[:2] + [0.0, 0.0], rtol=1e-5)


def test_teacher_argmax_reads_the_teacher_tap_and_round_trips():
    term = HardLabelCrossEntropy(weight=0.3, unlabelled="teacher_argmax",
                                 teacher_tap="logits")
    assert term.required_teacher_taps() == {"logits"}
    config = term.get_config()
    assert config["unlabelled"] == "teacher_argmax"
    again = run_serialization_test(term)
    assert again.unlabelled == "teacher_argmax" and again.initial_weight == 0.3
    rng = np.random.default_rng(0)
    run_term_test(term, {"logits": rng.normal(size=(4, 3))},
                  {"logits": rng.normal(size=(4, 3)).astype("float32")},
                  {"labels": np.array([2, 0, -1, -1], "int32")})
    # A config saved before the option existed loads as `skip`.
    old = {k: v for k, v in HardLabelCrossEntropy().get_config().items()
           if k not in ("unlabelled", "teacher_tap")}
    assert HardLabelCrossEntropy.from_config(old).unlabelled == "skip"
    with pytest.raises(ValueError, match="unlabelled"):
        HardLabelCrossEntropy(unlabelled="argmax")
