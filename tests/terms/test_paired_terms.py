"""What every term over `(teacher tap, student tap)` pairs (`PairedTerm`)
shares, checked once for each: its taps and default name, the pairs'
validation and config round trip, a width mismatch named, and the padding
mask that token-level terms need."""

import numpy as np
import pytest

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.errors import KdplugError
from kdplug.terms import AttentionScoreMSE
from kdplug.terms import AttentionTransfer
from kdplug.terms import CosineHidden
from kdplug.terms import FeatureMapTransfer
from kdplug.terms import FeatureStatisticsTransfer
from kdplug.terms import NormalizedClsMSE
from kdplug.terms import ProjectedHiddenMSE
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


def np_token_mean(per_token, mask):
    """Reference: `(batch, seq)` values averaged over each example's valid
    tokens; 0 for an example without one."""
    valid = mask.sum(-1)
    return np.where(valid > 0, (per_token * mask).sum(-1) / np.maximum(valid, 1), 0.0)


def np_cosine_distance(t, s):
    return 1.0 - (t * s).sum(-1) / (np.linalg.norm(t, axis=-1) * np.linalg.norm(s, axis=-1))


def np_squared_error(t, s):
    return ((t - s) ** 2).mean(-1)


# class, constructor arguments besides the pairs, its default name, tap kind
PAIRED = [
    (CosineHidden, {}, "cosine_hidden", "hidden"),
    (FeatureMapTransfer, {}, "feature_map_mse", "hidden"),
    (FeatureStatisticsTransfer, {"statistic": "variance"}, "feature_variance", "hidden"),
    (NormalizedClsMSE, {}, "patient_cls", "cls"),
    (ProjectedHiddenMSE, {"widths": [(4, 2)]}, "hidden_mse", "hidden"),
    (AttentionTransfer, {}, "attention_kl", "attention"),
    (AttentionScoreMSE, {}, "attention_mse", "attention_scores"),
]
# the terms that compare equally wide taps (ProjectedHiddenMSE projects them)
SAME_WIDTH = [(cls, kwargs, kind) for cls, kwargs, _, kind in PAIRED
              if kind in ("hidden", "cls") and cls is not ProjectedHiddenMSE]
# the terms that average a per-token value of equally wide states over each
# example's valid tokens: that value in numpy, and the test's tolerance
TOKEN_MEANS = [(CosineHidden, np_cosine_distance, 1e-6),
               (FeatureMapTransfer, np_squared_error, 1e-7)]
# the terms that average over each example's valid tokens
TOKEN_LEVEL = [(cls, {"widths": [(4, 4)]} if cls is ProjectedHiddenMSE else kwargs)
               for cls, kwargs, _, kind in PAIRED if kind == "hidden"]


@pytest.mark.parametrize("cls, per_token, atol", TOKEN_MEANS,
                         ids=[c.__name__ for c, _, _ in TOKEN_MEANS])
def test_sums_each_pairs_masked_token_mean_like_numpy(cls, per_token, atol):
    rng = np.random.default_rng(0)
    t1, t2, s1, s2 = (rng.normal(size=(3, 5, 4)).astype("float32") for _ in range(4))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], "int32")
    pairs = [("hidden/2", "hidden/1"), ("hidden/4", "hidden/2")]
    teacher, student = {"hidden/2": t1, "hidden/4": t2}, {"hidden/1": s1, "hidden/2": s2}
    expected = sum(np_token_mean(per_token(teacher[t], student[s]), mask) for t, s in pairs)
    term = cls(pairs)
    loss = run_term_test(term, teacher, student, {"padding_mask": mask},
                         expected=expected, atol=atol)
    assert loss[2] == 0.0  # no valid token (padded tokens: run_term_test)
    same = term(teacher, {"hidden/1": t1, "hidden/2": t2}, {"padding_mask": mask})
    np.testing.assert_allclose(same, [0.0, 0.0, 0.0], atol=atol)


@pytest.mark.parametrize("cls, kwargs, name, kind", PAIRED,
                         ids=[p[0].__name__ for p in PAIRED])
def test_taps_come_from_the_validated_pairs_and_round_trip(cls, kwargs, name, kind):
    t, s = f"{kind}/6", f"{kind}/3"
    term = cls([[t, s]], weight=0.5, **kwargs)
    assert term.name == name
    assert term.pairs == ((t, s),)
    assert term.required_teacher_taps() == {t}
    assert term.required_student_taps() == {s}
    clone = run_serialization_test(term)
    assert clone.pairs == ((t, s),)
    assert float(clone.weight.numpy()) == 0.5
    with pytest.raises(KdplugError, match="pairs must be"):
        cls([t], **kwargs)
    with pytest.raises(KdplugError, match="at least one"):
        cls([], **kwargs)


@pytest.mark.parametrize("cls, kwargs, kind", SAME_WIDTH,
                         ids=[c.__name__ for c, _, _ in SAME_WIDTH])
def test_a_width_mismatch_names_both_taps(cls, kwargs, kind):
    t, s = f"{kind}/4", f"{kind}/2"
    tokens = (2,) if kind == "hidden" else ()  # cls/<i> taps: (batch, width)
    term = cls([(t, s)], **kwargs)
    with pytest.raises(KdplugError, match=f"'{t}' has width 4 but student tap "
                                          f"'{s}' has width 3"):
        term({t: np.ones((1, *tokens, 4), "float32")},
             {s: np.ones((1, *tokens, 3), "float32")},
             {"padding_mask": np.ones((1, 2), "int32")})


@pytest.mark.parametrize("cls, kwargs", TOKEN_LEVEL,
                         ids=[c.__name__ for c, _ in TOKEN_LEVEL])
def test_token_level_terms_need_the_padding_mask(cls, kwargs):
    term = cls([("hidden/4", "hidden/2")], **kwargs)
    with pytest.raises(KdplugError, match="padding_mask"):
        term({"hidden/4": np.ones((1, 2, 4), "float32")},
             {"hidden/2": np.ones((1, 2, 4), "float32")}, {})
