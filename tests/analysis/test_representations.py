import numpy as np
import pytest

from kdplug import testing
from kdplug.analysis.representations import representation_layers
from kdplug.analysis.representations import sentence_representations
from kdplug.data.length_buckets import LengthBuckets
from kdplug.errors import KdplugError
from kdplug.models import BiLstmClassifier


def _batches(features, size):
    n = len(features["token_ids"])
    for start in range(0, n, size):
        yield {k: v[start:start + size] for k, v in features.items()}, None


def test_transformer_layers_are_embeddings_then_each_layer():
    model = testing.tiny_bert_classifier(num_layers=3)
    assert representation_layers(model) == [
        ("embeddings", "embeddings"), ("layer 1", "hidden/1"),
        ("layer 2", "hidden/2"), ("layer 3", "hidden/3")]


def test_cls_and_mean_vectors_equal_the_layer_outputs_pooled_by_hand(monkeypatch):
    model = testing.tiny_bert_classifier(num_layers=2)
    features, _ = testing.toy_arrays(num_examples=10)
    # Padding of different lengths: the mean must skip padded positions.
    features["padding_mask"][:, 5:] = False
    features["padding_mask"][0, 3:] = False
    taps, traced = model.taps, []
    with monkeypatch.context() as mp:  # taps() runs once per trace
        mp.setattr(model, "taps", lambda *a, **k: traced.append(1) or taps(*a, **k))
        reps = sentence_representations(model, _batches(features, 4), jit_compile=False)
    assert traced == [1]  # batches of 4, 4 and 2: one trace
    assert list(reps) == ["embeddings", "layer 1", "layer 2"]
    taps = model.taps(features, ["embeddings", "hidden/1", "hidden/2"])
    mask = features["padding_mask"].astype("float32")[:, :, None]
    for label, tap in (("embeddings", "embeddings"), ("layer 1", "hidden/1"),
                       ("layer 2", "hidden/2")):
        h = np.asarray(taps[tap])
        np.testing.assert_allclose(reps[label]["cls"], h[:, 0], rtol=1e-5, atol=1e-6)
        by_hand = (h * mask).sum(1) / mask.sum(1)
        np.testing.assert_allclose(reps[label]["mean"], by_hand, rtol=1e-5, atol=1e-6)
    # example 0 keeps 3 positions: its mean is the mean of those three
    h2 = np.asarray(taps["hidden/2"])[0, :3]
    np.testing.assert_allclose(reps["layer 2"]["mean"][0], h2.mean(0), rtol=1e-5, atol=1e-6)
    # XLA-compiled (the default; a run passes its `training.jit_compile`): the same
    compiled = sentence_representations(model, _batches(features, 5))
    for label in reps:
        for pooling in ("cls", "mean"):
            np.testing.assert_allclose(compiled[label][pooling], reps[label][pooling],
                                       rtol=1e-5, atol=1e-5)


def test_a_student_with_its_own_tokenizer_pools_over_its_own_mask():
    from kdplug.models import KeyedInputs

    inner = testing.tiny_bert_classifier(num_layers=1)
    own, _ = testing.toy_arrays(num_examples=6, seed=3)
    own["padding_mask"][:, 4:] = False
    teacher_side, _ = testing.toy_arrays(num_examples=6, seed=4)  # other lengths
    batch = {**teacher_side, **{f"student/{k}": v for k, v in own.items()}}
    reps = sentence_representations(KeyedInputs(inner), _batches(batch, 3),
                                    jit_compile=False)
    alone = sentence_representations(inner, _batches(own, 3), jit_compile=False)
    np.testing.assert_allclose(reps["layer 1"]["mean"], alone["layer 1"]["mean"],
                               rtol=1e-5, atol=1e-6)
    # in length buckets: each mask cuts its own inputs, the vectors the same
    cut = sentence_representations(KeyedInputs(inner), _batches(batch, 3),
                                   jit_compile=False, length_buckets=LengthBuckets(multiple=4))
    for pooling in ("cls", "mean"):
        np.testing.assert_allclose(cut["layer 1"][pooling], reps["layer 1"][pooling],
                                   rtol=0, atol=1e-5)


def test_vectors_read_in_length_buckets_equal_the_padded_ones_in_order():
    model = testing.tiny_bert_classifier(num_layers=2)
    features, _ = testing.toy_arrays(num_examples=11, seed=5)  # lengths 4-12
    padded = sentence_representations(model, _batches(features, 4), jit_compile=False)
    cut = sentence_representations(model, _batches(features, 4), jit_compile=False,
                                   length_buckets=LengthBuckets(multiple=4))
    assert list(cut) == list(padded) == ["embeddings", "layer 1", "layer 2"]
    for label in padded:
        for pooling in ("cls", "mean"):
            np.testing.assert_allclose(cut[label][pooling], padded[label][pooling],
                                       rtol=0, atol=1e-5)


@pytest.mark.slow
def test_bilstm_gives_its_pooled_state_whatever_the_poolings():
    model = BiLstmClassifier(vocabulary_size=40, num_classes=2, embedding_dim=8,
                             lstm_units=4, hidden_dim=8)
    features, _ = testing.toy_arrays(num_examples=6, vocabulary_size=40)
    reps = sentence_representations(model, _batches(features, 4), poolings=("cls",),
                                    jit_compile=False)
    assert list(reps) == ["pooled"] and list(reps["pooled"]) == ["pooled"]
    expected = np.asarray(model.taps(features, ["pooled"])["pooled"])
    np.testing.assert_allclose(reps["pooled"]["pooled"], expected, rtol=1e-5, atol=1e-6)


def test_errors_name_what_is_missing():
    class NoTaps:
        name = "plain"

        def available_taps(self):
            return ["logits"]

    with pytest.raises(KdplugError, match="no layer outputs to probe.*logits"):
        representation_layers(NoTaps())
    model = testing.tiny_bert_classifier(num_layers=1)
    with pytest.raises(KdplugError, match="poolings"):
        sentence_representations(model, [], poolings=("max",))
