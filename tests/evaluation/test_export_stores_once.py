"""Nothing is stored twice (issue #16): the TFLite converter's SavedModel is
temporary unless asked for, and the `.keras` export links to the run's
`student.keras`."""

import os

import numpy as np
import pytest

from kdplug import testing
from kdplug.evaluation.export import StudentExporter
from kdplug.evaluation.export_measure import ExportMeasurer


@pytest.mark.slow
def test_tflite_alone_leaves_no_saved_model_and_keras_is_linked(tmp_path):
    student = testing.tiny_bert_classifier(seed=3)
    keras_file = str(tmp_path / "student.keras")
    student.save(keras_file)
    out = tmp_path / "export"
    exporter = StudentExporter(student, sequence_length=testing.SEQUENCE_LENGTH)
    files = exporter.export(str(out), ("keras", "tflite_float32"), keras_file=keras_file)
    assert sorted(os.listdir(out)) == ["student.keras", "student_float32.tflite"]
    assert set(files) == {"keras", "tflite_float32"}
    assert os.stat(files["keras"]).st_ino == os.stat(keras_file).st_ino  # one copy
    x, _ = testing.toy_batch(4)
    np.testing.assert_allclose(ExportMeasurer(exporter).predictor("tflite_float32")(x),
                               student(x, training=False), atol=1e-4)
