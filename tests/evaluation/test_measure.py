"""`kdplug.evaluation.measure`: predictions of a model measured several
times come from one traced forward pass that follows its weights, and the
cache of those passes does not keep a model alive."""

import gc
import weakref

import numpy as np

from kdplug import testing
from kdplug.evaluation import measure


def test_one_forward_per_model_that_follows_its_weights():
    model = testing.tiny_bert_classifier(num_layers=1, seed=0)
    dataset = testing.toy_dataset(20, 8)
    outputs, labels = measure.predict_outputs(model, dataset, jit_compile=True)
    assert outputs.shape == (20, 2) and labels.shape == (20,)
    forward = measure._forward(model, None, True)
    np.testing.assert_allclose(outputs, np.concatenate(
        [model.predict(x, verbose=0) for x, _ in dataset]), atol=1e-5)
    # a later measurement (new weights): the same function, the new outputs
    model.set_weights(testing.tiny_bert_classifier(num_layers=1, seed=1).get_weights())
    again, _ = measure.predict_outputs(model, dataset, jit_compile=True)
    assert measure._forward(model, None, True) is forward
    assert forward.experimental_get_tracing_count() <= 2  # batches of 8 and 4
    np.testing.assert_allclose(again, np.concatenate(
        [model.predict(x, verbose=0) for x, _ in dataset]), atol=1e-5)
    assert not np.allclose(again, outputs)
    assert measure.accuracy(model, dataset) == np.mean(again.argmax(-1) == labels)


def test_the_cache_lets_models_go():
    model = testing.tiny_bert_classifier(num_layers=1, seed=0)
    measure.predict_outputs(model, testing.toy_dataset(8, 8))
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None
    assert all(m is not None for m in measure._FORWARDS.keys())
