import keras
import numpy as np
import pytest

from kdplug import testing
from kdplug.errors import KdplugError
from kdplug.models import BiLstmClassifier
from kdplug.models import BiLstmSiameseClassifier

ARGS = dict(vocabulary_size=testing.VOCAB_SIZE, embedding_dim=6, lstm_units=5,
            hidden_dim=7, dropout=0.0)


@pytest.fixture(scope="module")
def batch():
    return testing.toy_batch(batch_size=4)[0]


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(3)
    return BiLstmClassifier(num_classes=2, **ARGS)


def pair(x):
    out = dict(x)
    out["token_ids_b"] = np.asarray(x["token_ids"])[::-1].copy()
    out["padding_mask_b"] = np.asarray(x["padding_mask"])[::-1].copy()
    return out


def test_params_and_taps(model, batch):
    # embedding + 2 directions * 4 gates * (E + u + 1) * u + MLP
    lstm = 2 * 4 * (6 + 5 + 1) * 5
    assert model.count_params() == 64 * 6 + lstm + (10 * 7 + 7) + (7 * 2 + 2)
    taps = model.taps(batch, ["pooled", "logits"])
    assert taps["pooled"].shape == (4, 10) and taps["logits"].shape == (4, 2)
    assert model.available_taps() == ["pooled", "logits"]
    assert model.tap_width("pooled") == 10


def test_max_pool_ignores_padding(model, batch):
    """Each example alone, unpadded, pools to the same vector as in the batch."""
    pooled = np.asarray(model.taps(batch, ["pooled"])["pooled"])
    lengths = np.asarray(batch["padding_mask"]).sum(1)
    assert lengths.min() < testing.SEQUENCE_LENGTH
    for i, n in enumerate(lengths):
        alone = {"token_ids": np.asarray(batch["token_ids"])[i:i + 1, :n],
                 "padding_mask": np.ones((1, n), "int32")}
        np.testing.assert_allclose(
            np.asarray(model.taps(alone, ["pooled"])["pooled"])[0], pooled[i],
            atol=1e-5)
    empty = {"token_ids": np.zeros((1, 5), "int32"),
             "padding_mask": np.zeros((1, 5), "int32")}
    np.testing.assert_array_equal(np.asarray(model.taps(empty, ["pooled"])["pooled"]), 0)


def test_attention_request_is_a_clear_error(model, batch):
    with pytest.raises(KdplugError, match="has no attention"):
        model.taps(batch, ["attention/1", "logits"])
    with pytest.raises(KdplugError, match="offers: pooled, logits"):
        model.taps(batch, ["hidden/1"])


def test_word_ids_input_and_round_trip(batch, tmp_path):
    keras.utils.set_random_seed(4)
    model = BiLstmClassifier(num_classes=3, input="word_ids", **ARGS)
    x = {"word_ids": np.asarray(batch["token_ids"])}  # mask from ids != 0
    logits = np.asarray(model(x))
    with pytest.raises(KdplugError, match="no 'word_ids'"):
        model(batch)
    path = str(tmp_path / "bilstm.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BiLstmClassifier) and loaded.input_kind == "word_ids"
    np.testing.assert_allclose(np.asarray(loaded(x)), logits, atol=1e-6)
    assert BiLstmClassifier.from_config(model.get_config()).get_config() == model.get_config()


def test_flops(model):
    S, E, u, D, C = 12, 6, 5, 7, 2
    assert model.flops_per_example(S) == 2 * 2 * S * 4 * u * (E + u) + 2 * 2 * u * D + 2 * D * C


def test_siamese_features_and_round_trip(batch, tmp_path):
    keras.utils.set_random_seed(5)
    model = BiLstmSiameseClassifier(num_classes=3, **ARGS)
    x = pair(batch)
    taps = model.taps(x, ["pooled", "logits"])
    f = np.asarray(taps["pooled"])
    assert f.shape == (4, 40) and model.tap_width("pooled") == 40
    h1, h2 = f[:, :10], f[:, 10:20]
    h1_alone = np.asarray(model.encoder(batch["token_ids"], padding_mask=batch["padding_mask"]))
    np.testing.assert_allclose(h1, h1_alone, atol=1e-6)
    np.testing.assert_allclose(f[:, 20:30], h1 * h2, atol=1e-6)
    np.testing.assert_allclose(f[:, 30:], np.abs(h1 - h2), atol=1e-6)
    # one encoder, shared: the weights are counted once
    lstm = 2 * 4 * (6 + 5 + 1) * 5
    assert model.count_params() == 64 * 6 + lstm + (40 * 7 + 7) + (7 * 3 + 3)
    S = 12
    assert model.flops_per_example(S) == 2 * (2 * 2 * S * 4 * 5 * 11) + 2 * 40 * 7 + 2 * 7 * 3
    with pytest.raises(KdplugError, match="has no attention"):
        model.taps(x, ["attention_scores/1"])
    path = str(tmp_path / "siamese.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(taps["logits"]), atol=1e-6)
