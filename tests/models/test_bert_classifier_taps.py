import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from kdplug import testing
from kdplug.errors import KdplugError
from kdplug.models import MASKED_SCORE


@pytest.fixture(scope="module")
def model_and_batch():
    keras.utils.set_random_seed(1)
    model = testing.tiny_bert_classifier(num_layers=2, seed=1)
    x, _ = testing.toy_batch(batch_size=4)
    return model, x


def test_softmax_of_scores_equals_attention_probabilities(model_and_batch):
    model, x = model_and_batch
    names = ["attention/1", "attention_scores/1", "attention/2", "attention_scores/2"]
    taps = model.taps(x, names)
    assert sorted(taps) == sorted(names)
    pad = np.asarray(x["padding_mask"]) == 0
    assert pad.any()  # the batch really has padding
    for i in (1, 2):
        scores = np.asarray(taps[f"attention_scores/{i}"])
        assert scores.shape == (4, 2, testing.SEQUENCE_LENGTH, testing.SEQUENCE_LENGTH)
        # padded keys hold MASKED_SCORE, real keys finite moderate numbers
        key_pad = np.broadcast_to(pad[:, None, None, :], scores.shape)
        np.testing.assert_array_equal(scores[key_pad], MASKED_SCORE)
        assert np.abs(scores[~key_pad]).max() < 100
        probs = np.asarray(ops.softmax(scores, axis=-1))
        np.testing.assert_allclose(probs, np.asarray(taps[f"attention/{i}"]), atol=1e-6)
        np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
        assert probs[key_pad].max() < 1e-6


def test_scores_match_manual_query_key_product(model_and_batch):
    model, x = model_and_batch
    taps = model.taps(x, ["embeddings", "attention_scores/1"])
    mha = model.backbone.transformer_layers[0]._self_attention_layer
    qk, qb = mha._query_dense.get_weights()  # (H, N, d), (N, d)
    kk, kb = mha._key_dense.get_weights()
    e = np.asarray(taps["embeddings"])
    q = np.einsum("bth,hnd->btnd", e, qk) + qb
    k = np.einsum("bth,hnd->btnd", e, kk) + kb
    manual = np.einsum("btnd,bsnd->bnts", q, k) / np.sqrt(qk.shape[-1])
    keep = np.asarray(x["padding_mask"])[:, None, None, :] > 0
    keep = np.broadcast_to(keep, manual.shape)
    np.testing.assert_allclose(
        np.asarray(taps["attention_scores/1"])[keep], manual[keep], atol=1e-5
    )


def test_only_requested_taps_are_returned(model_and_batch):
    model, x = model_and_batch
    assert sorted(model.taps(x, ["hidden/1"])) == ["hidden/1"]
    assert sorted(model.taps(x, ["attention_scores/2", "cls/1"])) == [
        "attention_scores/2", "cls/1"]
    assert model._depth_needed({"attention_scores/1"}) == 1
    assert "attention_scores/2" in model.available_taps()
    assert model.tap_width("attention_scores/2") is None
    with pytest.raises(KdplugError, match="attention_scores/<i>"):
        model.taps(x, ["attention_scores/3"])


@pytest.mark.slow
def test_taps_inside_jit_compiled_tf_function(model_and_batch):
    model, x = model_and_batch
    names = ["attention_scores/2", "attention/2", "hidden/1", "cls/2", "logits"]

    @tf.function(jit_compile=True)
    def compiled(batch):
        return model.taps(batch, names, training=False)

    batch = {k: tf.constant(v) for k, v in x.items()}
    got = compiled(batch)
    want = model.taps(x, names)
    assert sorted(got) == sorted(names)
    for name in names:
        np.testing.assert_allclose(
            np.asarray(got[name]), np.asarray(want[name]), atol=1e-4, rtol=1e-4)


def test_flops_per_example_formula(model_and_batch):
    model, _ = model_and_batch
    # L=2, S=12, H=16, I=32, C=2:
    # per layer 8*S*H^2 + 4*S^2*H + 4*S*H*I = 24576 + 9216 + 24576 = 58368;
    # the top layer at [CLS] only: 4*S*H^2 + 4*H^2 + 4*S*H + 4*H*I
    # = 12288 + 1024 + 768 + 2048 = 16128
    assert model.flops_per_example(12) == 58368 + 16128 + 2 * 16 * 16 + 2 * 16 * 2
