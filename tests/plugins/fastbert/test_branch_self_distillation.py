import numpy as np
import pytest

from kdplug_plugins.fastbert.branch_self_distillation import BranchSelfDistillation


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_matches_hand_computed_kl_sum():
    final = np.array([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]], "float32")
    b1 = np.array([[0.0, 1.0, 0.0], [1.0, -1.0, 0.5]], "float32")
    b2 = np.array([[2.0, 0.0, -1.0], [3.0, 0.0, 0.0]], "float32")
    term = BranchSelfDistillation(["branch_logits/1", "branch_logits/2"],
                                  weight=0.5)
    student = {"logits": final, "branch_logits/1": b1, "branch_logits/2": b2}
    got = np.asarray(term({}, student, {"labels": np.array([-1, -1])}))
    lp = _log_softmax(final.astype("float64"))
    expected = sum(
        (np.exp(lp) * (lp - _log_softmax(b.astype("float64")))).sum(-1)
        for b in (b1, b2)
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # Hand check of one entry: example 2, branch 2 (uniform p vs [3, 0, 0]).
    q = np.exp([3.0, 0.0, 0.0]) / np.exp([3.0, 0.0, 0.0]).sum()
    kl = np.sum(1 / 3 * (np.log(1 / 3) - np.log(q)))
    assert kl == pytest.approx(0.99631, abs=1e-4)
    # Branch 2 equals the final logits for example 1: it contributes 0.
    kl_b1 = (np.exp(lp[0]) * (lp[0] - _log_softmax(b1[0].astype("float64")))).sum()
    assert got[0] == pytest.approx(kl_b1, rel=1e-5)
    # The weight is applied by the Distiller, not by the term.
    assert term.required_student_taps() == {
        "logits", "branch_logits/1", "branch_logits/2"}
    assert term.required_teacher_taps() == set()
    assert float(term.weight.numpy()) == 0.5


def test_zero_when_branches_match_and_config_round_trip():
    z = np.random.default_rng(0).normal(size=(4, 2)).astype("float32")
    term = BranchSelfDistillation(["b/1"], target="t")
    np.testing.assert_allclose(np.asarray(term({}, {"t": z, "b/1": z}, {})), 0,
                               atol=1e-6)
    again = BranchSelfDistillation.from_config(term.get_config())
    assert again.branches == ("b/1",) and again.target == "t"
    assert again.name == "self_distill"
    with pytest.raises(ValueError):
        BranchSelfDistillation([])
