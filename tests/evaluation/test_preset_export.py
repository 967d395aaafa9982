"""A student you can ship (issue #16): the keras-hub preset export loads with
keras-hub alone and predicts from raw strings, the SavedModel's `serve_text`
signature tokenises in the graph, TFLite gets `vocab.txt`, and nothing is
stored twice."""

import json
import os
import subprocess
import sys

import h5py
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kdplug import KdplugError
from kdplug import testing
from kdplug.data import TextEncoder
from kdplug.evaluation import preset_export
from kdplug.evaluation.export import PRESET
from kdplug.evaluation.export import VOCAB_FILE
from kdplug.evaluation.export import StudentExporter
from kdplug.evaluation.export_measure import ExportMeasurer
from kdplug.models import BiLstmClassifier

SEQ = testing.SEQUENCE_LENGTH  # 12, not keras-hub's default 512
TEXTS = ["a fine film", "the plot was dull and boring",
         "great acting , superb movie", "very weak and awful [MASK] plot"]
LABELS = ["negative", "neutral", "positive"]

# Run in a fresh interpreter that imports keras-hub and keras only.
LOAD_WITH_KERAS_HUB_ALONE = """
import json, sys
import keras_hub
model = keras_hub.models.TextClassifier.from_preset(sys.argv[1])
logits = model.predict(json.loads(sys.argv[2]), verbose=0)
print(json.dumps({"logits": logits.tolist(), "class": type(model).__name__,
                  "sequence_length": model.preprocessor.sequence_length,
                  "kdplug_imported": any(m.split(".")[0] == "kdplug"
                                         for m in sys.modules)}))
"""


def tokenizer():
    return keras_hub.tokenizers.BertTokenizer(vocabulary=testing.toy_vocabulary(),
                                              special_tokens_in_strings=True)


def student_with_spread_logits():
    """A tiny random student whose logits differ clearly between texts (at
    the initialiser's scale they are nearly constant)."""
    student = testing.tiny_bert_classifier(
        num_classes=len(LABELS), vocabulary_size=len(testing.toy_vocabulary()), seed=5)
    rng = np.random.default_rng(0)
    student.set_weights([w + rng.normal(0, 0.3, w.shape).astype(w.dtype)
                         for w in student.get_weights()])
    return student


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    student, tok = student_with_spread_logits(), tokenizer()
    out = tmp_path_factory.mktemp("export")
    exporter = StudentExporter(student, sequence_length=SEQ, tokenizer=tok,
                               label_names=LABELS)
    exporter.export(str(out), (PRESET, "saved_model", "tflite_float32"))
    features = TextEncoder(tok, SEQ).batch_encoder(False)(tf.constant(TEXTS))
    features = {k: v.numpy() for k, v in features.items()}
    return student, exporter, out, features


@pytest.mark.slow
def test_preset_predicts_raw_strings_with_keras_hub_alone(exported):
    student, exporter, _, features = exported
    preset = exporter.paths[PRESET]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WITH_KERAS_HUB_ALONE, preset, json.dumps(TEXTS)],
        capture_output=True, text=True, timeout=240, env=env, cwd=os.path.dirname(preset))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["kdplug_imported"] is False
    assert result["class"] == "BertTextClassifier"
    assert result["sequence_length"] == SEQ  # the preprocessor we built, not 512
    expected = np.asarray(student(features, training=False))
    assert np.ptp(expected[:, 0]) > 1e-2  # the texts give different logits
    np.testing.assert_allclose(np.asarray(result["logits"]), expected, atol=1e-5)


@pytest.mark.slow
def test_preset_records_its_sequence_length_and_labels(exported):
    _, exporter, _, _ = exported
    preset = exporter.paths[PRESET]
    with open(os.path.join(preset, "preprocessor.json")) as f:
        assert json.load(f)["config"]["sequence_length"] == SEQ
    assert not os.path.exists(os.path.join(preset, "sentence_bert_config.json"))
    with open(os.path.join(preset, preset_export.LABELS_FILE)) as f:
        labels = json.load(f)
    assert labels == {"names": LABELS, "ids": {n: i for i, n in enumerate(LABELS)}}


@pytest.mark.slow
def test_sizes_one_copy_of_the_weights_and_vocab_linked(exported):
    student, exporter, out, _ = exported
    preset = exporter.paths[PRESET]
    weight_bytes = 0
    for name in ("model.weights.h5", "task.weights.h5"):
        with h5py.File(os.path.join(preset, name), "r") as f:
            sizes = []
            f.visititems(lambda k, v: sizes.append(v.size * v.dtype.itemsize)
                         if isinstance(v, h5py.Dataset)
                         and not k.startswith("optimizer") else None)
            weight_bytes += sum(sizes)
    assert weight_bytes == 4 * student.count_params()  # backbone + head, once
    # Measured on this tiny model (5,779 parameters, 23 KB of float32
    # weights): preset 147 KB (mostly HDF5 and JSON overhead), SavedModel
    # 884 KB (variables stored twice by Keras' export archive, plus the
    # tokenizer in its graph), TFLite float32 67 KB.
    sizes = ExportMeasurer(exporter).size_bytes()
    assert weight_bytes < sizes[PRESET] < 200_000, sizes
    assert sorted(os.listdir(out)) == sorted(
        ["keras_hub_preset", "saved_model", "student_float32.tflite", VOCAB_FILE])
    vocab = os.path.join(preset, "assets", "tokenizer", "vocabulary.txt")
    assert os.stat(out / VOCAB_FILE).st_ino == os.stat(vocab).st_ino  # one copy
    with open(out / VOCAB_FILE) as f:
        assert f.read().split("\n")[:-1] == testing.toy_vocabulary()
    assert exporter.vocab_file() == {"path": str(out / VOCAB_FILE), "lowercase": False,
                                     "sequence_length": SEQ}


@pytest.mark.slow
def test_serve_text_equals_serving_default_on_the_encoded_ids(exported):
    student, exporter, _, features = exported
    loaded = tf.saved_model.load(exporter.paths["saved_model"])
    from_text = loaded.signatures["serve_text"](text=tf.constant(TEXTS))["output_0"]
    from_ids = loaded.signatures["serving_default"](
        **{k: tf.constant(v) for k, v in features.items()})["output_0"]
    np.testing.assert_allclose(from_text.numpy(), from_ids.numpy(), atol=1e-6)
    np.testing.assert_allclose(from_ids.numpy(), student(features), atol=1e-5)
    # TFLite keeps ids: encoded as for serving_default, it gives the same
    np.testing.assert_allclose(ExportMeasurer(exporter).predictor("tflite_float32")(features),
                               from_ids.numpy(), atol=1e-4)
    assert exporter.notes == []


def test_a_hub_text_classifier_of_another_family_becomes_its_task(tmp_path):
    from kdplug.models.hub_text_classifier import HubTextClassifier
    from kdplug.testing import families

    tok = families.tiny_tokenizer("roberta", tmp_path)
    student = HubTextClassifier(families.tiny_backbone("roberta", tok.vocabulary_size()),
                                num_classes=2, dropout=0.0)
    rebuilt = preset_export.keras_hub_task(student, tok, SEQ)
    assert type(rebuilt).__name__ == "RobertaTextClassifier"
    assert rebuilt.preprocessor.sequence_length == SEQ
    features = TextEncoder(tok, SEQ)(tf.constant(TEXTS))
    np.testing.assert_allclose(rebuilt(rebuilt.preprocessor(tf.constant(TEXTS))),
                               student(features), atol=1e-5)
    electra = HubTextClassifier(families.tiny_backbone("electra", 30), num_classes=2)
    with pytest.raises(KdplugError, match="electra family, for which keras-hub has no "
                                          "text classifier"):
        preset_export.check_presettable(electra)


def test_other_students_and_a_missing_tokenizer_are_refused(tmp_path):
    bilstm = BiLstmClassifier(vocabulary_size=30, num_classes=2, embedding_dim=8,
                              lstm_units=4, hidden_dim=8)
    with pytest.raises(KdplugError, match="BiLstmClassifier.*'saved_model'"):
        StudentExporter(bilstm, SEQ, tokenizer=tokenizer()).export(
            str(tmp_path / "a"), (PRESET, "keras"))
    student = testing.tiny_bert_classifier()
    with pytest.raises(KdplugError, match="needs the tokenizer"):
        StudentExporter(student, SEQ).export(str(tmp_path / "b"), (PRESET,))
    assert not os.listdir(tmp_path)  # refused before anything was written
