"""Any `keras.Model` as teacher or student (issue #16): its output is the
`logits` tap, a functional model's named layers are feature taps, and
`kdplug.distill` runs the common case in one call with the CLI's recipe."""

import keras
import numpy as np
import pytest

import kdplug
from kdplug import KdplugError
from kdplug import testing
from kdplug.models.model_taps import model_taps
from kdplug.terms import LogitMSE
from kdplug.terms import NormalizedClsMSE


def bag_of_words(name, seed, width=16):
    """A user's own functional classifier: it reads `token_ids` only."""
    keras.utils.set_random_seed(seed)
    ids = keras.Input((testing.SEQUENCE_LENGTH,), dtype="int32", name="token_ids")
    x = keras.layers.Embedding(testing.VOCAB_SIZE, width)(ids)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(width, activation="relu", name="features")(x)
    return keras.Model(ids, keras.layers.Dense(2, name="head")(x), name=name)


def accuracy(model, dataset):
    hits = total = 0
    for x, y in dataset:
        logits = model_taps(model, x, ["logits"])["logits"]
        hits += int(np.sum(np.argmax(logits, -1) == y.numpy()))
        total += len(y)
    return hits / total


@pytest.mark.slow
def test_distill_a_functional_student_from_a_kdplug_teacher_in_one_call():
    teacher = testing.tiny_bert_classifier(seed=0)
    teacher.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False,
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    teacher.fit(testing.toy_dataset(256, 32, seed=1), epochs=3, verbose=0)
    student = bag_of_words("student", seed=1)
    train, test = testing.toy_dataset(256, 32, seed=2), testing.toy_dataset(96, 32, seed=3)
    before = accuracy(student, test)
    history = kdplug.distill(teacher=teacher, student=student, train_data=train,
                             epochs=4, learning_rate=1e-2, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0]
    assert accuracy(student, test) > max(before, 0.8)
    assert teacher.trainable is False
    with pytest.raises(TypeError):  # keyword-only: no positional swap
        kdplug.distill(teacher, student, train)


@pytest.mark.slow
def test_named_layers_of_functional_models_are_feature_taps():
    teacher, student = bag_of_words("teacher", seed=0), bag_of_words("student", seed=1)
    x, y = testing.toy_batch(8)
    taps = model_taps(student, {**x, "teacher/logits": np.zeros((8, 2))},
                      ["logits", "features"])
    np.testing.assert_allclose(taps["logits"], student(x["token_ids"]), atol=1e-6)
    assert taps["features"].shape == (8, 16)
    distiller = kdplug.Distiller(student=student, teacher=teacher, terms=[
        LogitMSE(weight=1.0), NormalizedClsMSE([("features", "features")], weight=1.0)])
    distiller.compile(optimizer=keras.optimizers.Adam(1e-2), jit_compile=False)
    first = distiller.evaluate(x, y, verbose=0, return_dict=True)
    distiller.fit(testing.toy_dataset(64, 16), epochs=3, verbose=0)
    last = distiller.evaluate(x, y, verbose=0, return_dict=True)
    assert last["patient_cls"] < 0.5 * first["patient_cls"]  # features matched
    assert last["loss"] < first["loss"]


def test_taps_a_model_cannot_give_are_named():
    student = bag_of_words("student", seed=1)
    x, _ = testing.toy_batch(2)
    with pytest.raises(KdplugError, match="model 'student' has no layer 'hidden/1' to "
                                          "tap; its layers: token_ids, .*features"):
        model_taps(student, x, ["hidden/1"])

    class Subclassed(keras.Model):
        def __init__(self):
            super().__init__(name="mine")
            self.dense = keras.layers.Dense(2)

        def call(self, inputs, training=False):
            return self.dense(keras.ops.cast(inputs["token_ids"], "float32"))

    mine = Subclassed()
    assert model_taps(mine, x, ["logits"])["logits"].shape == (2, 2)
    with pytest.raises(KdplugError, match="Subclassed 'mine' has no taps\\(\\) and is not "
                                          "a functional model"):
        model_taps(mine, x, ["features"])
