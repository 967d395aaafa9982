import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import KdplugError
from kdplug import testing
from kdplug.evaluation.export import DEFAULT_FORMATS as FORMATS
from kdplug.evaluation.export import StudentExporter
from kdplug.evaluation.export_measure import ExportMeasurer
from kdplug.evaluation.export_measure import export_and_measure
from kdplug.evaluation.export_measure import tflite_predictor

SEQ = testing.SEQUENCE_LENGTH


def trained_student():
    # hidden 32 / FFN 64: kernels and the embedding reach 1,024+ weights, the
    # size from which dynamic-range quantization stores a tensor as int8.
    student = testing.tiny_bert_classifier(num_layers=2, hidden_dim=32,
                                           intermediate_dim=64, seed=4)
    student.compile(optimizer=keras.optimizers.Adam(3e-3),
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    jit_compile=False)
    student.fit(testing.toy_dataset(256, 32, seed=1), epochs=4, verbose=0)
    return student


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    student = trained_student()
    exporter = StudentExporter(student, sequence_length=SEQ)
    out = tmp_path_factory.mktemp("export")
    test_ds = testing.toy_dataset(96, 32, seed=7)
    report = export_and_measure(exporter, str(out), test_ds, runs=3)
    return student, exporter, report


@pytest.mark.slow
def test_every_artifact_exists_and_int8_is_smaller(exported):
    _, exporter, report = exported
    assert set(report["files"]) == set(FORMATS)
    assert os.path.isfile(report["files"]["keras"])
    assert os.path.isfile(os.path.join(report["files"]["saved_model"], "saved_model.pb"))
    sizes = report["size_bytes"]
    assert all(sizes[f] > 1000 for f in FORMATS), sizes
    assert sizes["tflite_int8"] < 0.7 * sizes["tflite_float32"], sizes
    assert report["notes"] == []  # BERT needs no TF select ops


@pytest.mark.slow
def test_exports_reproduce_the_keras_logits(exported):
    student, exporter, _ = exported
    reloaded = keras.saving.load_model(exporter.paths["keras"])
    saved = tf.saved_model.load(exporter.paths["saved_model"])
    lite = tflite_predictor(exporter.paths["tflite_float32"], exporter.input_keys)
    for n in (7, 33):  # two batch sizes: the TFLite interpreter is resized
        x, _ = testing.toy_arrays(n, seed=n)
        expected = np.asarray(student(x))
        np.testing.assert_allclose(np.asarray(reloaded(x)), expected, rtol=1e-5, atol=1e-5)
        serving = saved.signatures["serving_default"](
            **{k: tf.constant(v) for k, v in x.items()})
        np.testing.assert_allclose(serving["output_0"], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(lite(x), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_int8_model_agrees_on_argmax(exported):
    student, exporter, _ = exported
    x, _ = testing.toy_arrays(200, seed=11)
    expected = np.asarray(student(x))
    got = ExportMeasurer(exporter).predictor("tflite_int8")(x)
    assert got.shape == expected.shape
    agree = np.mean(np.argmax(got, -1) == np.argmax(expected, -1))
    assert agree >= 0.9, agree
    assert np.max(np.abs(got - expected)) < 0.5  # quantized, not identical
    assert np.max(np.abs(got - expected)) > 0


@pytest.mark.slow
def test_report_has_latency_and_accuracy_per_format(exported):
    student, _, report = exported
    latency = report["latency_ms"]
    assert set(latency) == {"keras", "saved_model", "tflite_float32", "tflite_int8"}
    for fmt, by_batch in latency.items():
        assert set(by_batch) == {"batch_1", "batch_32"}, fmt
        for timing in by_batch.values():
            assert 0 < timing["min"] <= timing["median"] <= timing["max"], (fmt, timing)
    acc = report["accuracy"]
    assert set(acc) == {"keras", "tflite_float32", "tflite_int8"}
    x, y = testing.toy_arrays(96, seed=7)
    keras_acc = np.mean(np.argmax(np.asarray(student(x)), -1) == y)
    assert acc["keras"] == pytest.approx(keras_acc)
    assert acc["keras"] >= 0.7  # the student learned the toy task
    assert acc["tflite_float32"] == pytest.approx(keras_acc)
    assert abs(acc["tflite_int8"] - keras_acc) <= 0.05


def test_unknown_format_and_missing_export_are_clear_errors(tmp_path):
    exporter = StudentExporter(testing.tiny_bert_classifier(num_layers=1))
    with pytest.raises(KdplugError, match="unknown export format"):
        exporter.export(str(tmp_path), formats=["onnx"])
    with pytest.raises(KdplugError, match="not exported"):
        ExportMeasurer(exporter).predictor("tflite_int8")


@pytest.mark.slow
def test_bilstm_student_needs_select_ops_and_is_skipped_with_a_note(tmp_path):
    from kdplug.models import BiLstmClassifier

    model = BiLstmClassifier(vocabulary_size=testing.VOCAB_SIZE, num_classes=2,
                             embedding_dim=8, lstm_units=8, hidden_dim=8)
    exporter = StudentExporter(model, sequence_length=SEQ)
    assert exporter.input_keys == ("token_ids", "padding_mask")
    exporter.export(str(tmp_path), formats=["tflite_float32"])
    assert set(exporter.paths) == {"tflite_float32"}  # its SavedModel was temporary
    assert os.listdir(tmp_path) == ["student_float32.tflite"]
    assert any("select ops" in n for n in exporter.notes), exporter.notes
    x, _ = testing.toy_arrays(4)
    latency = ExportMeasurer(exporter).latency_ms(x, batch_sizes=(1,), runs=1, warmup=0)
    assert set(latency) == {"keras"}
    assert any(n.startswith("tflite_float32: not measured") for n in exporter.notes)
