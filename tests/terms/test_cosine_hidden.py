import keras
import numpy as np
import pytest

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.errors import KdplugError
from kdplug.terms import CosineHidden


def np_cosine_loss(t, s, mask):
    cos = (t * s).sum(-1) / (np.linalg.norm(t, axis=-1) * np.linalg.norm(s, axis=-1))
    per_token = (1.0 - cos) * mask
    valid = mask.sum(-1)
    return np.where(valid > 0, per_token.sum(-1) / np.maximum(valid, 1), 0.0)


def test_hand_computed_values():
    # Example 1: cosines 0, 1, -1 -> losses 1, 0, 2; the third token is padding.
    # Example 2: cosines 1, 0, 0.6 -> losses 0, 1, 0.4; all valid.
    t = np.array([[[1, 0], [1, 0], [1, 0]],
                  [[2, 0], [0, 3], [3, 4]]], "float32")
    s = np.array([[[0, 1], [5, 0], [-1, 0]],
                  [[1, 0], [1, 0], [1, 0]]], "float32")
    mask = np.array([[1, 1, 0], [1, 1, 1]], "int32")
    term = CosineHidden([("hidden/2", "hidden/1")])
    loss = term({"hidden/2": t}, {"hidden/1": s}, {"padding_mask": mask})
    np.testing.assert_allclose(loss, [0.5, 1.4 / 3], rtol=1e-6)


def test_matches_numpy_with_two_pairs_and_masking():
    rng = np.random.default_rng(0)
    t1, t2, s1, s2 = (rng.normal(size=(3, 5, 4)).astype("float32") for _ in range(4))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], "int32")
    term = CosineHidden([("hidden/2", "hidden/1"), ("hidden/4", "hidden/2")])
    loss = keras.ops.convert_to_numpy(
        term({"hidden/2": t1, "hidden/4": t2}, {"hidden/1": s1, "hidden/2": s2},
             {"padding_mask": mask})
    )
    expected = np_cosine_loss(t1, s1, mask) + np_cosine_loss(t2, s2, mask)
    np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-6)
    assert loss[2] == 0.0  # no valid token
    # Padding positions do not matter.
    s1_changed = s1.copy()
    s1_changed[0, 3:] = 100.0
    loss2 = term({"hidden/2": t1, "hidden/4": t2},
                 {"hidden/1": s1_changed, "hidden/2": s2}, {"padding_mask": mask})
    np.testing.assert_allclose(loss2, loss, rtol=1e-6)


def test_taps_config_and_errors():
    term = CosineHidden([["hidden/6", "hidden/3"]], weight=0.5)
    assert term.required_teacher_taps() == {"hidden/6"}
    assert term.required_student_taps() == {"hidden/3"}
    clone = CosineHidden.from_config(term.get_config())
    assert clone.pairs == (("hidden/6", "hidden/3"),)
    assert float(clone.weight.numpy()) == 0.5
    with pytest.raises(KdplugError, match="width"):
        term({"hidden/6": np.ones((1, 2, 4), "float32")},
             {"hidden/3": np.ones((1, 2, 3), "float32")},
             {"padding_mask": np.ones((1, 2), "int32")})
    with pytest.raises(KdplugError, match="pairs"):
        CosineHidden(["hidden/6"])
    with pytest.raises(KdplugError, match="at least one"):
        CosineHidden([])
