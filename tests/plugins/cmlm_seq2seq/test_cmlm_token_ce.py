import numpy as np
import pytest

from kdplug_plugins.cmlm_seq2seq.token_cross_entropy import TokenCrossEntropy


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


LOGITS = np.array([[[2.0, 0.0, 0.0], [0.0, 1.0, -1.0], [5.0, 0.0, 0.0]],
                   [[0.0, 0.0, 0.0], [1.0, 1.0, 3.0], [0.0, 2.0, 0.0]]], "float32")
LABELS = np.array([[0, 1, -1], [2, 2, 1]], "int32")


def test_mean_over_real_tokens_by_hand():
    got = np.asarray(TokenCrossEntropy()({}, {"logits": LOGITS}, {"labels": LABELS}))
    # example 0: -log softmax([2,0,0])[0] = log(1 + 2 e^-2); position 2 is padding
    ce00 = np.log(1 + 2 * np.exp(-2.0))
    ce01 = -log_softmax(LOGITS[0, 1])[1]
    assert got[0] == pytest.approx((ce00 + ce01) / 2, rel=1e-5)
    # example 1: log 3, then the other two
    ce10 = np.log(3.0)
    ce11 = -log_softmax(LOGITS[1, 1])[2]
    ce12 = -log_softmax(LOGITS[1, 2])[1]
    assert got[1] == pytest.approx((ce10 + ce11 + ce12) / 3, rel=1e-5)


def test_label_smoothing():
    e = 0.1
    got = np.asarray(TokenCrossEntropy(label_smoothing=e)(
        {}, {"logits": LOGITS[:1]}, {"labels": LABELS[:1]}))
    ls = log_softmax(LOGITS[0])
    per = [(1 - e) * -ls[j, LABELS[0, j]] + e * -ls[j].mean() for j in (0, 1)]
    assert got[0] == pytest.approx(np.mean(per), rel=1e-5)
    clone = TokenCrossEntropy.from_config(TokenCrossEntropy(0.5, e).get_config())
    assert clone.label_smoothing == e and clone.required_teacher_taps() == set()


def test_is_the_core_token_cross_entropy():
    """The formula lives once, in `kdplug.terms.TokenHardCrossEntropy`: with
    no label smoothing the seq2seq term gives the core term's numbers, and
    with it the core term given the same smoothing; only the default name
    differs (`token_ce`, what saved configs and history columns read)."""
    from kdplug.terms import TokenHardCrossEntropy

    assert issubclass(TokenCrossEntropy, TokenHardCrossEntropy)
    batch = ({}, {"logits": LOGITS}, {"labels": LABELS})
    for e in (0.0, 0.1):
        np.testing.assert_array_equal(
            np.asarray(TokenCrossEntropy(label_smoothing=e)(*batch)),
            np.asarray(TokenHardCrossEntropy(label_smoothing=e)(*batch)))
    assert TokenCrossEntropy().name == "token_ce"
    assert TokenCrossEntropy().get_config() == TokenHardCrossEntropy(
        name="token_ce").get_config()
