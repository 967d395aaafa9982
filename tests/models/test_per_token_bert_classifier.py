import keras
import numpy as np
import pytest

from kdplug import testing
from kdplug.models import BertClassifier
from kdplug.models import flops
from kdplug.students import narrow_bert
from kdplug.students import truncated_bert
from kdplug_plugins.students.narrow import NarrowStudent

SEQ = testing.SEQUENCE_LENGTH


@pytest.fixture(scope="module")
def tagger():
    backbone = testing.tiny_backbone(num_layers=2, seed=3)
    return BertClassifier(backbone, num_classes=5, dropout=0.0, per_token=True)


@pytest.fixture(scope="module")
def batch():
    x, _ = testing.toy_batch(batch_size=3)
    return x


def test_logits_classify_every_position_of_the_last_layer(tagger, batch):
    taps = tagger.taps(batch, ["logits", "hidden/2", "pooled", "cls/2"])
    assert taps["logits"].shape == (3, SEQ, 5)
    assert tuple(tagger(batch).shape) == (3, SEQ, 5)
    kernel, bias = tagger.classifier.get_weights()
    expected = np.asarray(taps["hidden/2"]) @ kernel + bias
    np.testing.assert_allclose(np.asarray(taps["logits"]), expected, atol=1e-5)
    # the other taps are those of a sequence classifier
    assert taps["pooled"].shape == (3, 16)
    np.testing.assert_allclose(np.asarray(taps["cls/2"]),
                               np.asarray(taps["hidden/2"])[:, 0], atol=1e-6)
    # asked alone, logits still run the top layer for every position
    np.testing.assert_allclose(np.asarray(tagger.taps(batch, ["logits"])["logits"]),
                               expected, atol=1e-5)
    assert tagger.tap_width("logits") == 5


def test_sequence_classifier_is_unchanged(batch):
    model = testing.tiny_bert_classifier(num_classes=3, seed=3)
    assert model.per_token is False
    assert model.get_config()["per_token"] is False
    assert tuple(model(batch).shape) == (3, 3)
    # a config saved before the option existed loads as a sequence classifier
    config = {k: v for k, v in model.get_config().items() if k != "per_token"}
    assert BertClassifier.from_config(config).per_token is False


def test_save_and_load_round_trip(tagger, batch, tmp_path):
    path = str(tmp_path / "tagger.keras")
    tagger.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.per_token is True and loaded.num_classes == 5
    np.testing.assert_allclose(np.asarray(loaded(batch)), np.asarray(tagger(batch)),
                               atol=1e-6)


def test_flops_count_every_position():
    model = BertClassifier(testing.tiny_backbone(num_layers=2), num_classes=5,
                           per_token=True)
    layer = flops.transformer_layer_flops(SEQ, 16, 32)
    assert model.flops_per_example(SEQ) == 2 * layer + flops.dense_flops(SEQ, 16, 5)


def test_students_of_a_per_token_teacher_are_per_token(tagger, batch):
    student = truncated_bert(tagger, [0], num_classes=5, dropout=0.0)
    assert student.per_token is True
    assert tuple(student(batch).shape) == (3, SEQ, 5)
    np.testing.assert_array_equal(student.classifier.get_weights()[0],
                                  tagger.classifier.get_weights()[0])
    narrow = NarrowStudent(NarrowStudent.Config(
        num_layers=1, hidden_dim=8, intermediate_dim=16, num_heads=2)).build(tagger, 5)
    assert narrow.per_token is True
    assert tuple(narrow(batch).shape) == (3, SEQ, 5)
    assert narrow_bert(64, 2, num_layers=1, hidden_dim=8, intermediate_dim=16,
                       num_heads=2).per_token is False
