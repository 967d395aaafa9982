import math

import keras
import keras_hub
import numpy as np
import pytest

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.errors import KdplugError
from kdplug.terms import MaskedLMLoss
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test

V, H = 7, 4


def np_gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def np_mlm(hidden, positions, ids, weights, p):
    x = np.take_along_axis(hidden, positions[..., None], axis=1)
    x = np_gelu(x @ p["kernel"] + p["bias"])
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    x = (x - mean) / np.sqrt(var + 1e-5) * p["gamma"] + p["beta"]
    logits = x @ p["embeddings"].T + p["output_bias"]
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    ce = -np.take_along_axis(log_probs, ids[..., None], axis=-1)[..., 0]
    total = (ce * weights).sum(-1)
    count = weights.sum(-1)
    return np.where(count > 0, total / np.maximum(count, 1e-9), 0.0)


def make_term(rng):
    embedding = keras_hub.layers.ReversibleEmbedding(V, H, name="tok")
    embedding.build((None, None))
    term = MaskedLMLoss("hidden/2", token_embedding=embedding, weight=2.0)
    params = {
        "embeddings": rng.normal(size=(V, H)),
        "kernel": rng.normal(size=(H, H)),
        "bias": rng.normal(size=(H,)),
        "gamma": rng.normal(size=(H,)),
        "beta": rng.normal(size=(H,)),
        "output_bias": rng.normal(size=(V,)),
    }
    params = {k: v.astype("float32") for k, v in params.items()}
    for w in term.weights:
        key = w.path.split("/")[-1]
        if key in params:
            w.assign(params[key])
    return term, embedding, params


def test_matches_numpy_with_masked_slots():
    rng = np.random.default_rng(0)
    term, _, params = make_term(rng)
    hidden = rng.normal(size=(3, 5, H)).astype("float32")
    batch = {
        "mask_positions": np.array([[1, 3, 0], [2, 0, 0], [0, 0, 0]], "int32"),
        "mask_ids": np.array([[4, 6, 2], [5, 2, 2], [2, 2, 2]], "int32"),
        # Example 1: two real slots; example 2: one; example 3: none.
        "mask_weights": np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]], "float32"),
    }
    loss = keras.ops.convert_to_numpy(term({}, {"hidden/2": hidden}, batch))
    expected = np_mlm(hidden, batch["mask_positions"], batch["mask_ids"],
                      batch["mask_weights"], params)
    np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-6)
    assert loss[2] == 0.0
    # Padding slots (weight 0) do not matter whatever they point at.
    batch2 = dict(batch, mask_ids=np.array([[4, 6, 0], [5, 1, 3], [6, 6, 6]], "int32"))
    np.testing.assert_allclose(term({}, {"hidden/2": hidden}, batch2), loss, rtol=1e-6)


def test_head_is_tied_to_the_embedding_and_owned_by_the_term():
    rng = np.random.default_rng(1)
    term, embedding, params = make_term(rng)
    assert any(w is embedding.embeddings for w in term.trainable_weights)
    own = [w for w in term.trainable_weights if w is not embedding.embeddings]
    # dense kernel + bias, layer-norm gamma + beta, output bias
    assert sum(int(np.prod(w.shape)) for w in own) == H * H + 3 * H + V
    hidden = rng.normal(size=(1, 3, H)).astype("float32")
    batch = {"mask_positions": np.array([[1]], "int32"),
             "mask_ids": np.array([[3]], "int32"),
             "mask_weights": np.array([[1.0]], "float32")}
    before = keras.ops.convert_to_numpy(term({}, {"hidden/2": hidden}, batch))
    embedding.embeddings.assign(params["embeddings"] * 2.0)
    after = keras.ops.convert_to_numpy(term({}, {"hidden/2": hidden}, batch))
    assert not np.allclose(before, after)
    assert term.required_student_taps() == {"hidden/2"}
    assert term.required_teacher_taps() == set()
    assert term.masking == {"mask_rate": 0.15, "max_predictions": None,
                            "mask_token_rate": 0.8, "random_token_rate": 0.1}


def test_untied_config_round_trip_and_errors():
    term = MaskedLMLoss("hidden/2", vocabulary_size=V, hidden_dim=H, max_predictions=2)
    clone = run_serialization_test(term)
    assert clone.masking["max_predictions"] == 2
    rng = np.random.default_rng(2)
    run_term_test(term, {}, {"hidden/2": rng.normal(size=(3, 5, H)).astype("float32")},
                  {"mask_positions": np.array([[1, 3], [2, 0], [4, 4]], "int32"),
                   "mask_ids": np.array([[4, 6], [5, 2], [1, 1]], "int32"),
                   "mask_weights": np.array([[1, 1], [1, 0], [0, 0]], "float32")})
    with pytest.raises(KdplugError, match="mask_positions"):
        term({}, {"hidden/2": np.zeros((1, 3, H), "float32")}, {"padding_mask": None})
    with pytest.raises(KdplugError, match="token_embedding"):
        MaskedLMLoss("hidden/2")
    with pytest.raises(KdplugError, match="sum to"):
        MaskedLMLoss("hidden/2", vocabulary_size=V, hidden_dim=H,
                     mask_token_rate=0.9, random_token_rate=0.2)


def test_a_tied_term_rebuilt_from_its_config_is_untied():
    """The embedding is the student's and is not serialised: the rebuilt
    head has an output kernel of its own and a `hidden_dim`-wide
    intermediate layer (what the comment in `get_config` says)."""
    embedding = keras_hub.layers.ReversibleEmbedding(V, H, name="tok")
    embedding.build((None, None))
    term = MaskedLMLoss("hidden/2", token_embedding=embedding, hidden_dim=H + 2)
    clone = MaskedLMLoss.from_config(term.get_config())
    assert term.tied and not clone.tied
    shapes = {w.path.split("/")[-1]: tuple(w.shape) for w in clone.head.weights}
    assert shapes["output_kernel"] == (H + 2, V)
    assert shapes["kernel"] == (H + 2, H + 2)  # the tied head's: (H + 2, H)
    assert "output_kernel" not in {w.path.split("/")[-1] for w in term.head.weights}
