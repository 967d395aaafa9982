import numpy as np

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.terms import NormalizedClsMSE
from kdplug.testing import run_term_test


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_hand_computed_values():
    # [3, 4] -> [0.6, 0.8]; [1, 0] stays: diff [-0.4, 0.8] -> 0.16 + 0.64 = 0.8.
    # [0, 2] -> [0, 1] vs [0, 5] -> [0, 1]: 0 (scale does not matter).
    t = np.array([[3, 4], [0, 2]], "float32")
    s = np.array([[1, 0], [0, 5]], "float32")
    term = NormalizedClsMSE([("cls/2", "cls/1")], average=False)
    loss = term({"cls/2": t}, {"cls/1": s}, {})
    np.testing.assert_allclose(loss, [0.8, 0.0], atol=1e-6)
    # The default averages over the 2 features (and 1 pair): 0.8 / 2.
    loss = NormalizedClsMSE([("cls/2", "cls/1")])({"cls/2": t}, {"cls/1": s}, {})
    np.testing.assert_allclose(loss, [0.4, 0.0], atol=1e-6)


def test_sums_pairs_like_numpy_and_reads_cls_of_sequences():
    rng = np.random.default_rng(1)
    t2, t4, s1, s2 = (rng.normal(size=(4, 6)).astype("float32") for _ in range(4))
    pairs = [("cls/2", "cls/1"), ("cls/4", "cls/2")]
    teacher, student = {"cls/2": t2, "cls/4": t4}, {"cls/1": s1, "cls/2": s2}
    summed = NormalizedClsMSE(pairs, weight=100.0, average=False)
    expected = (((unit(t2) - unit(s1)) ** 2).sum(-1)
                + ((unit(t4) - unit(s2)) ** 2).sum(-1))
    run_term_test(summed, teacher, student, {}, expected=expected)
    # Default: the reference code's F.mse_loss scale, mean over 2 pairs x 6 features.
    term = NormalizedClsMSE(pairs, weight=100.0)
    np.testing.assert_allclose(term(teacher, student, {}), expected / 12, rtol=1e-5)
    # A (batch, seq, hidden) tap is reduced to position 0 ([CLS]).
    seq_t = np.concatenate([t2[:, None], rng.normal(size=(4, 3, 6))], 1)
    seq_s = np.concatenate([s1[:, None], rng.normal(size=(4, 3, 6))], 1)
    seq_t, seq_s = seq_t.astype("float32"), seq_s.astype("float32")
    one = NormalizedClsMSE([("hidden/2", "hidden/1")], average=False)
    np.testing.assert_allclose(
        one({"hidden/2": seq_t}, {"hidden/1": seq_s}, {}),
        ((unit(t2) - unit(s1)) ** 2).sum(-1), rtol=1e-5,
    )
    assert term.required_teacher_taps() == {"cls/2", "cls/4"}
    assert term.required_student_taps() == {"cls/1", "cls/2"}
    assert summed.average is False
