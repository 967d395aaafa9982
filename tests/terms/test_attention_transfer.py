import keras
import numpy as np
import pytest
import tensorflow as tf

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.errors import KdplugError
from kdplug.terms import AttentionTransfer
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


def np_kl_attention(t, s, mask, eps=1e-12):
    """Reference: KL(t || s) over valid keys, mean over heads, mean over
    valid queries."""
    keys = mask[:, None, None, :]
    kl = (t * (np.log(np.maximum(t, eps)) - np.log(np.maximum(s, eps))) * keys).sum(-1)
    per_query = kl.mean(1)
    valid = mask.sum(-1)
    return np.where(valid > 0, (per_query * mask).sum(-1) / np.maximum(valid, 1), 0.0)


def random_attention(rng, batch, heads, seq, mask):
    """Softmax rows over the valid keys (padded keys exactly 0, like Keras'
    masked softmax), garbage rows at padded queries."""
    logits = rng.normal(size=(batch, heads, seq, seq))
    logits = np.where(mask[:, None, None, :] > 0, logits, -1e9)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs = probs / probs.sum(-1, keepdims=True)
    return probs.astype("float32")


def test_hand_computed_value_with_padded_key_and_query():
    # One example, one head, 3 tokens, the last one padding.
    # query 0: KL([.5, .5] || [.2, .6]) (the student's .2 on the padded key
    #          is ignored) = .5 ln(.5/.2) + .5 ln(.5/.6)
    # query 1: KL([1, 0] || [.5, .5]) = ln 2 (0 ln 0 = 0)
    # query 2: padding, ignored.
    t = np.array([[[[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.3, 0.3, 0.4]]]], "float32")
    s = np.array([[[[0.2, 0.6, 0.2], [0.5, 0.5, 0.0], [0.9, 0.1, 0.0]]]], "float32")
    mask = np.array([[1, 1, 0]], "int32")
    term = AttentionTransfer([("attention/1", "attention/1")])
    loss = term({"attention/1": t}, {"attention/1": s}, {"padding_mask": mask})
    expected = (0.5 * np.log(0.5 / 0.2) + 0.5 * np.log(0.5 / 0.6) + np.log(2.0)) / 2
    np.testing.assert_allclose(loss, [expected], rtol=1e-6)


def test_matches_numpy_two_heads_two_pairs_masking():
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]], "int32")
    t1, t2, s1, s2 = (random_attention(rng, 3, 2, 4, mask) for _ in range(4))
    term = AttentionTransfer([("attention/2", "attention/1"),
                              ("attention/4", "attention/2")])
    teacher = {"attention/2": t1, "attention/4": t2}
    expected = np_kl_attention(t1, s1, mask) + np_kl_attention(t2, s2, mask)
    loss = run_term_test(term, teacher, {"attention/1": s1, "attention/2": s2},
                         {"padding_mask": mask}, expected=expected, atol=1e-7)
    # (padded keys and queries do not count: run_term_test)
    assert (loss[:2] > 0).all() and loss[2] == 0.0
    # KL(p || p) = 0.
    same = term(teacher, {"attention/1": t1, "attention/2": t2}, {"padding_mask": mask})
    np.testing.assert_allclose(same, [0.0, 0.0, 0.0], atol=1e-6)


def test_head_reductions():
    rng = np.random.default_rng(1)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
    t = random_attention(rng, 2, 4, 5, mask)
    s = random_attention(rng, 2, 2, 5, mask)
    taps = ({"attention/3": t}, {"attention/3": s}, {"padding_mask": mask})
    group = AttentionTransfer([("attention/3", "attention/3")], head_reduction="group")
    # teacher heads (0, 1) -> student head 0, (2, 3) -> head 1
    t_group = np.stack([t[:, :2].mean(1), t[:, 2:].mean(1)], axis=1)
    np.testing.assert_allclose(group(*taps), np_kl_attention(t_group, s, mask),
                               rtol=1e-5)
    mean = AttentionTransfer([("attention/3", "attention/3")], head_reduction="mean")
    np.testing.assert_allclose(
        mean(*taps),
        np_kl_attention(t.mean(1, keepdims=True), s.mean(1, keepdims=True), mask),
        rtol=1e-5)
    with pytest.raises(KdplugError, match="4 heads .* has 2"):
        AttentionTransfer([("attention/3", "attention/3")])(*taps)


def test_gradient_flows_to_student_only_at_valid_positions():
    rng = np.random.default_rng(2)
    mask = np.array([[1, 1, 0]], "int32")
    t = random_attention(rng, 1, 1, 3, mask)
    logits = keras.Variable(rng.normal(size=(1, 1, 3, 3)).astype("float32"))
    term = AttentionTransfer([("attention/1", "attention/1")])
    with tf.GradientTape() as tape:
        s = keras.ops.softmax(logits, axis=-1)
        loss = keras.ops.sum(term({"attention/1": t}, {"attention/1": s},
                                  {"padding_mask": mask}))
    grad = tape.gradient(loss, logits).numpy()
    assert np.isfinite(grad).all()
    np.testing.assert_array_equal(grad[0, 0, 2], 0.0)  # padded query row
    assert np.abs(grad[0, 0, :2]).sum() > 0


def test_config_and_errors():
    # (taps, pairs, name: test_paired_terms.py)
    term = AttentionTransfer([["attention/6", "attention/3"]], head_reduction="group")
    assert run_serialization_test(term).head_reduction == "group"
    with pytest.raises(KdplugError, match="attention/<i>"):
        AttentionTransfer([("hidden/1", "hidden/1")])
    with pytest.raises(KdplugError, match="head_reduction"):
        AttentionTransfer([("attention/1", "attention/1")], head_reduction="max")


def test_grouped_heads_meet_the_term_contract_under_xla_too():
    rng = np.random.default_rng(3)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], "int32")
    t = random_attention(rng, 2, 4, 4, mask)
    s = random_attention(rng, 2, 2, 4, mask)
    term = AttentionTransfer([("attention/1", "attention/1")], head_reduction="group")
    t_group = np.stack([t[:, :2].mean(1), t[:, 2:].mean(1)], axis=1)
    run_term_test(term, {"attention/1": t}, {"attention/1": s}, {"padding_mask": mask},
                  expected=np_kl_attention(t_group, s, mask))
