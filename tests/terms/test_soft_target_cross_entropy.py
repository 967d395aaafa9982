import numpy as np
import pytest

from kdplug.terms import SoftTargetCrossEntropy
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_matches_hand_computed_values():
    t = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]], "float32")
    s = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]], "float32")
    T = 2.0
    expected = -(softmax(t / T) * np.log(softmax(s / T))).sum(-1) * T * T
    term = SoftTargetCrossEntropy(temperature=T)
    got = np.asarray(term({"logits": t}, {"logits": s}, {}))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # first row by hand: p_t = softmax([1, 0, -.5])
    p = np.exp([1, 0, -0.5]) / np.exp([1, 0, -0.5]).sum()
    q = np.exp([0.5, 0.5, 0]) / np.exp([0.5, 0.5, 0]).sum()
    assert got[0] == pytest.approx(-4 * (p * np.log(q)).sum(), rel=1e-5)


def test_is_minimal_when_student_equals_teacher():
    t = np.array([[1.0, -2.0]], "float32")
    term = SoftTargetCrossEntropy(temperature=3.0)
    same = float(term({"logits": t}, {"logits": t}, {})[0])
    other = float(term({"logits": t}, {"logits": -t}, {})[0])
    entropy = -(softmax(t / 3) * np.log(softmax(t / 3))).sum() * 9
    assert same == pytest.approx(entropy, rel=1e-5)
    assert other > same


def test_temperature_is_schedulable_and_serialised():
    term = SoftTargetCrossEntropy(temperature=4.0, weight=0.3, name="soft")
    term.temperature.assign(1.0)
    t = np.array([[2.0, 0.0]], "float32")
    s = np.array([[0.0, 0.0]], "float32")
    expected = -(softmax(t) * np.log(softmax(s))).sum()
    assert float(term({"logits": t}, {"logits": s}, {})[0]) == pytest.approx(expected, rel=1e-5)
    clone = run_serialization_test(term)
    assert clone.name == "soft"
    assert float(clone.weight.numpy()) == pytest.approx(0.3)
    assert float(clone.temperature.numpy()) == pytest.approx(4.0)


@pytest.mark.parametrize("class_mean", [False, True])
def test_term_contract(class_mean):
    rng = np.random.default_rng(0)
    run_term_test(SoftTargetCrossEntropy(temperature=2.0, weight=0.5, class_mean=class_mean),
                  {"logits": rng.normal(size=(4, 3))},
                  {"logits": rng.normal(size=(4, 3)).astype("float32")}, {})


def test_rejects_non_positive_temperature():
    with pytest.raises(ValueError, match="temperature"):
        SoftTargetCrossEntropy(temperature=0.0)


def test_class_mean_divides_by_the_number_of_classes():
    # PKD's reference: KLDivLoss(reduction='mean') * T^2 over (batch, C)
    t = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]], "float32")
    s = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]], "float32")
    T, C = 2.0, 3
    summed = SoftTargetCrossEntropy(temperature=T)
    mean = SoftTargetCrossEntropy(temperature=T, class_mean=True)
    got = np.asarray(mean({"logits": t}, {"logits": s}, {}))
    np.testing.assert_allclose(
        got, np.asarray(summed({"logits": t}, {"logits": s}, {})) / C, rtol=1e-6)
    # first row by hand: 4/3 * sum_c p_c * -log q_c
    p = np.exp([1, 0, -0.5]) / np.exp([1, 0, -0.5]).sum()
    q = np.exp([0.5, 0.5, 0]) / np.exp([0.5, 0.5, 0]).sum()
    assert got[0] == pytest.approx(4 / 3 * -(p * np.log(q)).sum(), rel=1e-5)
    # CE - KL is the teacher's entropy (no gradient): the reference's KL value
    # plus T^2 / C * H(p) is what the term logs
    pt, ps = softmax(t / T), softmax(s / T)
    kl = T * T * (pt * (np.log(pt) - np.log(ps))).sum(-1) / C
    entropy = T * T * -(pt * np.log(pt)).sum(-1) / C
    np.testing.assert_allclose(got, kl + entropy, rtol=1e-5)
    # its batch mean is the reference's scalar (sum over batch x classes / (B C))
    # plus the mean entropy
    reference = T * T * (pt * (np.log(pt) - np.log(ps))).sum() / (2 * C)
    assert got.mean() == pytest.approx(reference + entropy.mean(), rel=1e-5)


def test_class_mean_on_binary_logits_halves_the_loss():
    t = np.array([[3.0, -1.0]], "float32")
    s = np.array([[0.0, 0.0]], "float32")
    T = 5.0
    # p = softmax([0.6, -0.2]), q = [1/2, 1/2]: sum_c p_c * -log q_c = ln 2
    expected = T * T * np.log(2.0) / 2
    term = SoftTargetCrossEntropy(temperature=T, class_mean=True)
    assert float(term({"logits": t}, {"logits": s}, {})[0]) == pytest.approx(expected, rel=1e-6)


def test_class_mean_is_serialised_and_defaults_off():
    assert SoftTargetCrossEntropy().class_mean is False
    term = SoftTargetCrossEntropy(temperature=2.0, class_mean=True)
    assert term.get_config()["class_mean"] is True
    assert run_serialization_test(term).class_mean is True
    # a config saved before the option existed loads with the old (summed) scale
    old = {k: v for k, v in term.get_config().items() if k != "class_mean"}
    assert SoftTargetCrossEntropy.from_config(old).class_mean is False
