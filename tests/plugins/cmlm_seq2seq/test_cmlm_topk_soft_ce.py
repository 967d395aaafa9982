import numpy as np
import pytest

from kdplug_plugins.cmlm_seq2seq.top_k_soft_cross_entropy import TopKSoftCrossEntropy


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


# One example, vocabulary of 5, three decoder positions, the last one padding.
LOGITS = np.array([[[1.0, 0.0, -1.0, 2.0, 0.5],
                    [0.0, 3.0, 0.0, 1.0, -2.0],
                    [9.0, 9.0, 9.0, 9.0, 9.0]]], "float32")
IDS = np.array([[[3, 0], [1, 4], [0, 0]]], "int32")
PROBS = np.array([[[0.6, 0.2], [0.5, 0.5], [0.0, 0.0]]], "float16")
LABELS = np.array([[3, 1, -1]], "int32")


def run(term, logits=LOGITS, ids=IDS, probs=PROBS, labels=LABELS):
    out = term({"topk_ids": ids, "topk_probs": probs}, {"logits": logits},
               {"labels": labels})
    return np.asarray(out)


def test_teacher_only_temperature_by_hand():
    T = 2.0
    got = run(TopKSoftCrossEntropy(temperature=T, temper_student=False))
    # position 0: p = (0.6, 0.2) -> p^(1/2) renormalised over the K
    a, b = np.sqrt(0.6), np.sqrt(0.2)
    t0 = np.array([a, b]) / (a + b)           # (0.634, 0.366)
    ls0 = log_softmax(LOGITS[0, 0])
    ce0 = -(t0[0] * ls0[3] + t0[1] * ls0[0])
    # position 1: equal probabilities stay (0.5, 0.5) at any temperature
    ls1 = log_softmax(LOGITS[0, 1])
    ce1 = -(0.5 * ls1[1] + 0.5 * ls1[4])
    # position 2 is padding: the mean runs over the two real tokens
    assert got.shape == (1,)
    assert got[0] == pytest.approx((ce0 + ce1) / 2, rel=1e-4)
    assert t0[0] == pytest.approx(0.6340, abs=1e-4)


def test_tempered_student_is_scaled_by_t_squared():
    T = 2.0
    got = run(TopKSoftCrossEntropy(temperature=T, temper_student=True))
    a, b = np.sqrt(0.6), np.sqrt(0.2)
    t0 = np.array([a, b]) / (a + b)
    ls0 = log_softmax(LOGITS[0, 0] / T)
    ls1 = log_softmax(LOGITS[0, 1] / T)
    ce = (-(t0[0] * ls0[3] + t0[1] * ls0[0]) - (0.5 * ls1[1] + 0.5 * ls1[4])) / 2
    assert got[0] == pytest.approx(T * T * ce, rel=1e-4)


def test_temperature_one_is_plain_soft_cross_entropy_renormalised_over_k():
    got = run(TopKSoftCrossEntropy(temperature=1.0))
    ls0, ls1 = log_softmax(LOGITS[0, 0]), log_softmax(LOGITS[0, 1])
    ce0 = -(0.75 * ls0[3] + 0.25 * ls0[0])   # (0.6, 0.2) / 0.8
    ce1 = -(0.5 * ls1[1] + 0.5 * ls1[4])
    assert got[0] == pytest.approx((ce0 + ce1) / 2, rel=1e-4)


def test_padding_masks_every_position_and_the_batch_stays_per_example():
    term = TopKSoftCrossEntropy(temperature=1.0)
    one = run(term)
    changed = LOGITS.copy()
    changed[0, 2] = [-5.0, 4.0, 0.0, 1.0, 2.0]  # a padding position
    assert run(term, logits=changed)[0] == pytest.approx(one[0], rel=1e-6)
    # a second example with only its first position real
    logits = np.concatenate([LOGITS, LOGITS])
    ids, probs = np.concatenate([IDS, IDS]), np.concatenate([PROBS, PROBS])
    labels = np.array([[3, 1, -1], [3, -1, -1]], "int32")
    got = run(term, logits, ids, probs, labels)
    ls0 = log_softmax(LOGITS[0, 0])
    assert got[0] == pytest.approx(one[0], rel=1e-6)
    assert got[1] == pytest.approx(-(0.75 * ls0[3] + 0.25 * ls0[0]), rel=1e-4)


def test_minimal_when_the_student_matches_the_renormalised_top_k():
    term = TopKSoftCrossEntropy(temperature=1.0)
    logits = LOGITS.copy()
    logits[0, 0] = np.log([0.25, 1e-6, 1e-6, 0.75, 1e-6])  # = the targets
    matched = run(term, logits=logits)[0]
    assert matched < run(term)[0]
    # what is left at position 0 is the targets' entropy
    ls1 = log_softmax(LOGITS[0, 1])
    entropy = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))
    assert matched == pytest.approx((entropy - 0.5 * (ls1[1] + ls1[4])) / 2, rel=1e-3)


def test_schedulable_temperature_and_config_round_trip():
    term = TopKSoftCrossEntropy(temperature=4.0, temper_student=False, weight=0.3,
                                name="kd")
    term.temperature.assign(1.0)
    expected = run(TopKSoftCrossEntropy(temperature=1.0, temper_student=False))
    np.testing.assert_allclose(run(term), expected, rtol=1e-6)
    clone = TopKSoftCrossEntropy.from_config(term.get_config())
    assert clone.name == "kd" and clone.temper_student is False
    assert float(clone.weight.numpy()) == pytest.approx(0.3)
    assert float(clone.temperature.numpy()) == pytest.approx(4.0)
    assert clone.required_teacher_taps() == {"topk_ids", "topk_probs"}
    with pytest.raises(ValueError, match="temperature"):
        TopKSoftCrossEntropy(temperature=0.0)
