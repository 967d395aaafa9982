import numpy as np
import pytest

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.errors import KdplugError
from kdplug.models import MASKED_SCORE
from kdplug.terms import AttentionScoreMSE
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test

PAIR = [("attention_scores/2", "attention_scores/1")]


def np_score_mse(t, s, mask):
    entries = mask[:, None, :, None] * mask[:, None, None, :]
    sq = np.where(entries > 0, (s - t) ** 2, 0.0).sum((2, 3)).mean(1)
    valid = mask.sum(-1) ** 2
    return np.where(valid > 0, sq / np.maximum(valid, 1), 0.0)


def test_hand_computed_value_masks_padded_keys_and_queries():
    # one example, 2 heads, 3 tokens, the last one padding: only the 2 x 2
    # top-left block counts. head 0: diffs [[1, 0], [0, 1]] -> 2 / 4 = .5
    # head 1: diffs [[2, 0], [0, 0]] -> 4 / 4 = 1;  mean over heads = .75
    t = np.zeros((1, 2, 3, 3), "float32")
    t[..., 2] = MASKED_SCORE  # padded key
    s = np.zeros((1, 2, 3, 3), "float32")
    s[..., 2] = MASKED_SCORE
    s[0, 0, 0, 0], s[0, 0, 1, 1] = 1.0, -1.0
    s[0, 1, 0, 0] = 2.0
    s[0, :, 2, :2] = 1000.0  # padded query: ignored
    t[0, 0, 0, 2] = 0.0  # teacher and student disagree on a padded key
    term = AttentionScoreMSE(PAIR)
    out = term({"attention_scores/2": t}, {"attention_scores/1": s},
               {"padding_mask": np.array([[1, 1, 0]], "int32")})
    np.testing.assert_allclose(np.asarray(out), [0.75], rtol=1e-6)


def test_random_scores_match_numpy_and_empty_example_is_zero():
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], "int32")
    t = rng.normal(size=(3, 2, 4, 4)).astype("float32")
    s = rng.normal(size=(3, 2, 4, 4)).astype("float32")
    keys = mask[:, None, None, :] > 0
    t = np.where(keys, t, MASKED_SCORE).astype("float32")
    s = np.where(keys, s, MASKED_SCORE).astype("float32")
    term = AttentionScoreMSE(PAIR + [("attention_scores/4", "attention_scores/2")])
    out = run_term_test(term, {"attention_scores/2": t, "attention_scores/4": s},
                        {"attention_scores/1": s, "attention_scores/2": t},
                        {"padding_mask": mask}, expected=2 * np_score_mse(t, s, mask))
    assert out[2] == 0.0


def test_head_reduction_and_validation():
    rng = np.random.default_rng(1)
    mask = np.array([[1, 1, 0]], "int32")
    t = rng.normal(size=(1, 4, 3, 3)).astype("float32")
    s = rng.normal(size=(1, 2, 3, 3)).astype("float32")
    with pytest.raises(KdplugError, match="head_reduction"):
        AttentionScoreMSE(PAIR)({"attention_scores/2": t},
                                {"attention_scores/1": s}, {"padding_mask": mask})
    term = AttentionScoreMSE(PAIR, head_reduction="group")
    out = term({"attention_scores/2": t}, {"attention_scores/1": s},
               {"padding_mask": mask})
    grouped = t.reshape(1, 2, 2, 3, 3).mean(2)
    np.testing.assert_allclose(np.asarray(out), np_score_mse(grouped, s, mask),
                               rtol=1e-5)
    with pytest.raises(KdplugError, match="attention_scores"):
        AttentionScoreMSE([("attention/2", "attention/1")])
    with pytest.raises(KdplugError, match="unknown head_reduction"):
        AttentionScoreMSE(PAIR, head_reduction="max")
    assert term.get_config()["pairs"] == [list(PAIR[0])]
    assert run_serialization_test(term).head_reduction == "group"
