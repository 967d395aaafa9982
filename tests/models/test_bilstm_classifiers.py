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


def run_lstm_alone(lstm, x, go_backwards):
    """`lstm`'s weights in a fresh keras LSTM run on `x` (no mask, no
    padding): its final state."""
    alone = keras.layers.LSTM(lstm.units, go_backwards=go_backwards)
    alone.build(x.shape)
    alone.set_weights(lstm.get_weights())
    return keras.ops.convert_to_numpy(alone(x))


def test_final_states_are_the_lstms_run_on_the_unpadded_sequence():
    from kdplug.models.bilstm_encoder import BiLstmEncoder

    keras.utils.set_random_seed(5)
    encoder = BiLstmEncoder(20, embedding_dim=3, lstm_units=4, dropout=0.0,
                            pooling="final_states")
    ids = np.array([[5, 7, 2, 9, 0, 0],     # 4 real tokens, right padding
                    [3, 0, 0, 0, 0, 0],     # 1 real token
                    [4, 6, 8, 1, 2, 11],    # no padding
                    [0, 0, 0, 0, 0, 0]],    # no real token: zeros
                   "int32")
    got = keras.ops.convert_to_numpy(encoder(ids, training=False))
    assert got.shape == (4, 8)
    for row, length in enumerate([4, 1, 6]):
        x = keras.ops.convert_to_numpy(encoder.embedding(ids[row:row + 1, :length]))
        forward = run_lstm_alone(encoder.bilstm.forward_layer, x, False)
        backward = run_lstm_alone(encoder.bilstm.backward_layer, x, True)
        np.testing.assert_allclose(got[row], np.concatenate([forward, backward], -1)[0],
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[3], np.zeros(8))
    # max pooling of the same weights is another vector; a padded copy of a row
    # gives the same final states.
    encoder.pooling = "max"
    assert not np.allclose(keras.ops.convert_to_numpy(encoder(ids[:1])), got[:1])
    encoder.pooling = "final_states"
    longer = np.concatenate([ids[:1], np.zeros((1, 3), "int32")], axis=1)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(encoder(longer)), got[:1],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [BiLstmClassifier, BiLstmSiameseClassifier])
def test_pooling_is_saved_and_old_configs_load_as_max(cls, batch, tmp_path):
    keras.utils.set_random_seed(3)
    model = cls(num_classes=2, pooling="final_states", **ARGS)
    config = model.get_config()
    assert config["pooling"] == "final_states"
    x = pair(batch) if cls is BiLstmSiameseClassifier else batch
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = keras.saving.load_model(path)
    assert again.encoder.pooling == "final_states"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(again(x)),
                               keras.ops.convert_to_numpy(model(x)), rtol=1e-5)
    del config["pooling"]  # a kdplug 0.1 config
    assert cls.from_config(config).encoder.pooling == "max"
    with pytest.raises(ValueError, match="pooling"):
        cls(num_classes=2, pooling="mean", **ARGS)
