import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from kdplug import testing
from kdplug.models import BottleneckBertClassifier
from kdplug.models import BottleneckTransformerBlock

ARGS = dict(vocabulary_size=testing.VOCAB_SIZE, num_classes=3, num_layers=2,
            hidden_dim=16, intra_dim=8, num_heads=2, intermediate_dim=12,
            num_feedforward=3, embedding_dim=6, max_sequence_length=32,
            dropout=0.0)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(2)
    return BottleneckBertClassifier(**ARGS)


@pytest.fixture(scope="module")
def batch():
    return testing.toy_batch(batch_size=4)[0]


def expected_params(V=64, C=3, L=2, H=16, h=8, I=12, F=3, E=6, P=32, S=2):
    embeddings = V * E + (3 * E * H + H) + P * H + S * H + 2 * H
    block = (
        (H * h + h) + 2 * h                       # bottleneck in + LN
        + 2 * (h * h + h) + (H * h + h) + (h * h + h)  # Q, K (intra), V (wide), O
        + 2 * h                                   # attention LN
        + F * ((h * I + I) + (I * h + h) + 2 * h)  # stacked FFNs
        + (h * H + H) + 2 * H                     # bottleneck out + LN
    )
    return embeddings + L * block + (H * H + H) + (H * C + C)


def test_param_count_and_all_trainable(model):
    assert model.count_params() == expected_params()
    assert len(model.trainable_weights) == len(model.weights)
    assert not model.non_trainable_weights


def test_taps_shapes_and_attention_scores(model, batch):
    names = ["embeddings", "hidden/1", "hidden/2", "cls/2", "attention/2",
             "attention_scores/2", "pooled", "logits"]
    taps = model.taps(batch, names)
    assert sorted(taps) == sorted(names)
    s = testing.SEQUENCE_LENGTH
    assert taps["hidden/2"].shape == (4, s, 16)  # inter-block width
    assert taps["embeddings"].shape == (4, s, 16)
    assert taps["attention/2"].shape == (4, 2, s, s)
    assert taps["logits"].shape == (4, 3)
    np.testing.assert_allclose(np.asarray(taps["cls/2"]),
                               np.asarray(taps["hidden/2"])[:, 0], atol=0)
    probs = ops.softmax(taps["attention_scores/2"], axis=-1)
    np.testing.assert_allclose(np.asarray(probs), np.asarray(taps["attention/2"]),
                               atol=1e-6)
    pad = np.asarray(batch["padding_mask"]) == 0
    att = np.asarray(taps["attention/2"])
    assert att[np.broadcast_to(pad[:, None, None, :], att.shape)].max() < 1e-6
    np.testing.assert_allclose(np.asarray(model(batch)), np.asarray(taps["logits"]),
                               atol=1e-6)
    assert sorted(model.taps(batch, ["hidden/1"])) == ["hidden/1"]


def test_padding_does_not_change_real_positions(model, batch):
    changed = dict(batch)
    ids = np.array(batch["token_ids"])
    ids[np.asarray(batch["padding_mask"]) == 0] = 7
    changed["token_ids"] = ids
    a = model.taps(batch, ["logits"])["logits"]
    b = model.taps(changed, ["logits"])["logits"]
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)


@pytest.mark.slow
def test_keras_round_trip(model, batch, tmp_path):
    path = str(tmp_path / "bottleneck.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BottleneckBertClassifier)
    assert loaded.get_config() == model.get_config()
    names = ["hidden/2", "attention_scores/1", "logits"]
    want, got = model.taps(batch, names), loaded.taps(batch, names)
    for name in names:
        np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]),
                                   atol=1e-6)
    clone = BottleneckBertClassifier.from_config(model.get_config())
    assert clone.count_params() == model.count_params()
    block = model.blocks[0]
    assert BottleneckTransformerBlock.from_config(block.get_config()).intra_dim == 8


@pytest.mark.slow
def test_taps_under_xla(model, batch):
    names = ["attention_scores/1", "attention/1", "hidden/1"]
    compiled = tf.function(lambda b: model.taps(b, names), jit_compile=True)
    got = compiled({k: tf.constant(v) for k, v in batch.items()})
    want = model.taps(batch, names)
    for name in names:
        np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]),
                                   atol=1e-4)


def test_flops_per_example(model):
    S, H, h, I, F, E, C = 12, 16, 8, 12, 3, 6, 3
    block = (2 * S * H * h                       # bottleneck in
             + 2 * 2 * S * h * h + 2 * S * H * h + 2 * S * h * h  # Q, K, V, O
             + 2 * 2 * S * S * h                 # scores and context
             + F * 2 * 2 * S * h * I             # stacked FFNs
             + 2 * S * h * H)                    # bottleneck out
    want = 2 * S * 3 * E * H + 2 * block + 2 * H * H + 2 * H * C
    assert model.flops_per_example(S) == want
