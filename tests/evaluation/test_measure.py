"""`kdplug.evaluation.measure`: predictions of a model measured several
times come from one traced forward pass that follows its weights, its
latency and its `keras` export format reuse that trace, and the cache of
those passes does not keep a model alive."""

import gc
import weakref

import numpy as np
import pytest

from kdplug import testing
from kdplug.evaluation import measure
from kdplug.evaluation.export import StudentExporter
from kdplug.evaluation.export_measure import ExportMeasurer


@pytest.mark.slow
def test_one_forward_per_model_that_follows_its_weights():
    model = testing.tiny_bert_classifier(num_layers=1, seed=0)
    dataset = testing.toy_dataset(20, 8)
    outputs, labels = measure.predict_outputs(model, dataset, jit_compile=True)
    assert outputs.shape == (20, 2) and labels.shape == (20,)
    forward = measure.forward_function(model, None, True)
    np.testing.assert_allclose(outputs, np.concatenate(
        [model.predict(x, verbose=0) for x, _ in dataset]), atol=1e-5)
    # a later measurement (new weights): the same function, the new outputs
    model.set_weights(testing.tiny_bert_classifier(num_layers=1, seed=1).get_weights())
    again, _ = measure.predict_outputs(model, dataset, jit_compile=True)
    assert measure.forward_function(model, None, True) is forward
    assert forward.function.experimental_get_tracing_count() == 1  # batches of 8 and 4
    np.testing.assert_allclose(again, np.concatenate(
        [model.predict(x, verbose=0) for x, _ in dataset]), atol=1e-5)
    assert not np.allclose(again, outputs)
    assert measure.accuracy(model, dataset) == np.mean(again.argmax(-1) == labels)


def test_latency_and_the_keras_export_reuse_the_predictions_trace(tmp_path):
    model = testing.tiny_bert_classifier(num_layers=1, seed=0)
    dataset = testing.toy_dataset(20, 8)
    outputs, _ = measure.predict_outputs(model, dataset)
    forward = measure.forward_function(model)
    assert forward.function.experimental_get_tracing_count() == 1  # batches of 8 and 4
    one = measure.first_examples(dataset, 1)
    latency = measure.latency_ms(model, one, runs=3, warmup=1)
    assert 0 < latency["min"] <= latency["median"] <= latency["max"]
    exporter = StudentExporter(model, sequence_length=8)
    exporter.export(str(tmp_path), formats=("keras",))
    measurer = ExportMeasurer(exporter)
    times = measurer.latency_ms(dataset, formats=["keras"], batch_sizes=(1, 32), runs=2,
                                warmup=1)
    assert set(times["keras"]) == {"batch_1", "batch_32"}
    np.testing.assert_allclose(measurer.predictor("keras")(one), outputs[:1], atol=1e-5)
    # batch sizes 1 and 32 too
    assert forward.function.experimental_get_tracing_count() == 1
    # a tap is its own function (the multi-task student's latency)
    tapped = measure.latency_ms(model, one, runs=1, warmup=1, tap="logits")
    assert tapped["median"] > 0
    assert measure.forward_function(model, "logits") is not forward


def test_the_cache_lets_models_go():
    model = testing.tiny_bert_classifier(num_layers=1, seed=0)
    measure.predict_outputs(model, testing.toy_dataset(8, 8))
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None
    assert all(m is not None for m in measure._FORWARDS.keys())
