import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kdplug import testing
from kdplug.models import encoder_taps
from kdplug.models.cls_only_layer import cls_only_layer


@pytest.mark.parametrize("normalize_first", [False, True])
def test_equals_the_full_layer_at_position_0(normalize_first):
    layer = keras_hub.layers.TransformerEncoder(64, 2, normalize_first=normalize_first)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 10, 32)).astype("float32")
    padding_mask = np.ones((4, 10), "int32")
    padding_mask[:, 7:] = 0
    padding_mask[0, 3:] = 0
    full = keras.ops.convert_to_numpy(layer(x, padding_mask=padding_mask))
    fast = keras.ops.convert_to_numpy(cls_only_layer(layer, x, padding_mask))
    assert fast.shape == (4, 1, 32)
    np.testing.assert_allclose(fast, full[:, :1], atol=2e-6)
    # Padded keys are masked: changing a padded position changes nothing.
    x[0, 5] += 10.0
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(cls_only_layer(layer, x, padding_mask)), fast,
        atol=2e-6)


def test_classifier_uses_it_only_when_the_top_layer_is_read_at_cls(monkeypatch):
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return cls_only_layer(*args, **kwargs)

    monkeypatch.setattr(encoder_taps, "cls_only_layer", counting)
    model = testing.tiny_bert_classifier(num_layers=3, seed=1)
    x, _ = testing.toy_batch(8)
    full = model.taps(x, ["hidden/3", "cls/3", "logits"])  # needs every position
    assert calls == []
    logits = model(x)
    fast = model.taps(x, ["cls/3", "cls/1", "pooled"])
    assert len(calls) == 2
    np.testing.assert_allclose(logits, full["logits"], atol=1e-6)
    np.testing.assert_allclose(fast["cls/3"], full["cls/3"], atol=1e-6)
    # a lower layer's `hidden/2` keeps layer 2 whole; layer 3 is still [CLS]-only
    model.taps(x, ["hidden/2", "logits"])
    assert len(calls) == 3
    # Gradients through the [CLS]-only layer equal those through the full one.
    grads = []
    for names in (["hidden/3", "logits"], ["logits"]):
        with tf.GradientTape() as tape:
            loss = keras.ops.sum(model.taps(x, names)["logits"] ** 2)
        grads.append(tape.gradient(loss, model.trainable_weights))
    for full_grad, fast_grad in zip(*grads):
        np.testing.assert_allclose(tf.convert_to_tensor(fast_grad),
                                   tf.convert_to_tensor(full_grad), atol=1e-5)
