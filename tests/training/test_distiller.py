import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import KdplugError
from kdplug.errors import ConfigError
from kdplug import testing
from kdplug.students import truncated_bert
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy


def trained_teacher(epochs=8):
    teacher = testing.tiny_bert_classifier(num_layers=2, seed=1)
    teacher.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    teacher.fit(testing.toy_dataset(256, 32, seed=1), epochs=epochs, verbose=0)
    return teacher


def kd_terms(alpha=0.5, temperature=2.0):
    return [
        SoftTargetCrossEntropy(temperature, weight=alpha),
        HardLabelCrossEntropy(weight=1 - alpha),
    ]


def make_distiller(teacher, student, lr=3e-3, **kwargs):
    distiller = Distiller(student, teacher, kd_terms(**kwargs))
    distiller.compile(
        optimizer=keras.optimizers.Adam(lr),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=False,  # XLA against the graph: tests/training/test_precision.py
    )
    return distiller


@pytest.fixture(scope="module")
def teacher():
    return trained_teacher()


@pytest.mark.slow
def test_fit_lowers_loss_and_student_learns(teacher):
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    distiller = make_distiller(teacher, student)
    val = testing.toy_dataset(128, 64, seed=9)
    before = distiller.evaluate(val, verbose=0, return_dict=True)
    history = distiller.fit(
        testing.toy_dataset(256, 32, seed=1), validation_data=val, epochs=6, verbose=0
    ).history
    assert set(history) >= {"loss", "soft_ce", "hard_ce", "accuracy", "val_loss",
                            "val_accuracy"}
    assert history["loss"][-1] < 0.7 * history["loss"][0]
    assert history["val_accuracy"][-1] > before["accuracy"] + 0.15
    assert history["val_accuracy"][-1] >= 0.75


@pytest.mark.slow
def test_logged_loss_is_weighted_sum_of_per_example_term_means(teacher):
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    distiller = make_distiller(teacher, student, alpha=0.3)
    logs = distiller.evaluate(testing.toy_dataset(64, 16), verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx(0.3 * logs["soft_ce"] + 0.7 * logs["hard_ce"],
                                         rel=1e-5)
    # per-example means: identical whatever the batch size
    logs8 = distiller.evaluate(testing.toy_dataset(64, 8), verbose=0, return_dict=True)
    assert logs8["loss"] == pytest.approx(logs["loss"], rel=1e-5)


@pytest.mark.slow
def test_teacher_weights_unchanged_and_not_trainable(teacher):
    before = [w.numpy().copy() for w in teacher.weights]
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    distiller = make_distiller(teacher, student)
    distiller.fit(testing.toy_dataset(64, 16), epochs=1, verbose=0)
    for a, b in zip(before, teacher.weights):
        np.testing.assert_array_equal(a, b.numpy())
    student_ids = {id(v) for v in student.trainable_variables}
    assert {id(v) for v in distiller.trainable_variables} == student_ids
    assert len(student.trainable_variables) == len(
        [w for w in student.weights if "seed_generator" not in w.path])


@pytest.mark.slow
def test_cached_teacher_outputs_give_the_same_losses(teacher):
    x, y = testing.toy_arrays(64)
    logits = teacher.predict(x, verbose=0)
    cached = dict(x, **{"teacher/logits": logits})
    losses = []
    for features, t in ((x, teacher), (cached, None)):
        keras.utils.set_random_seed(3)
        student = testing.tiny_bert_classifier(num_layers=1, seed=2)
        distiller = make_distiller(t, student)
        ds = tf.data.Dataset.from_tensor_slices((features, y)).batch(16)
        losses.append(distiller.fit(ds, epochs=2, verbose=0).history["loss"])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)


def test_missing_teacher_is_a_clear_error():
    student = testing.tiny_bert_classifier(num_layers=1)
    distiller = make_distiller(None, student)
    with pytest.raises(KdplugError, match="no teacher"):
        distiller.fit(testing.toy_dataset(16, 8), epochs=1, verbose=0)


def test_duplicate_term_names_rejected():
    student = testing.tiny_bert_classifier(num_layers=1)
    with pytest.raises(KdplugError, match="unique"):
        Distiller(student, None, [HardLabelCrossEntropy(), HardLabelCrossEntropy()])


@pytest.mark.slow
def test_call_and_predict_behave_like_the_student(teacher):
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    distiller = make_distiller(teacher, student)
    x, _ = testing.toy_batch(8)
    np.testing.assert_allclose(distiller.predict(x, verbose=0), student.predict(x, verbose=0),
                               rtol=1e-6)


@pytest.mark.slow
def test_keras_round_trip(teacher, tmp_path):
    student = truncated_bert(teacher, [1], num_classes=2)
    distiller = make_distiller(teacher, student)
    distiller.fit(testing.toy_dataset(64, 16), epochs=1, verbose=0)
    x, _ = testing.toy_batch(8)
    path = str(tmp_path / "distiller.keras")
    distiller.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, Distiller)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), distiller.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    assert [t.name for t in loaded.terms] == ["soft_ce", "hard_ce"]
    assert float(loaded.terms[0].temperature.numpy()) == 2.0
    np.testing.assert_allclose(loaded.teacher.predict(x, verbose=0),
                               teacher.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_mirrored_strategy_matches_single_device(cpu_devices):
    ds = testing.toy_dataset(64, 16)

    def run(strategy):
        with strategy.scope():
            t = testing.tiny_bert_classifier(num_layers=2, seed=1)
            s = testing.tiny_bert_classifier(num_layers=1, seed=2)
            d = make_distiller(t, s, lr=1e-2)
        h = d.fit(ds, epochs=3, verbose=0).history
        return h, [w.numpy() for w in s.weights]

    h1, w1 = run(tf.distribute.OneDeviceStrategy(cpu_devices[0]))
    h2, w2 = run(tf.distribute.MirroredStrategy(cpu_devices))
    for key in ("loss", "soft_ce", "hard_ce", "accuracy"):
        np.testing.assert_allclose(h1[key], h2[key], rtol=1e-5, atol=1e-6)
    assert h1["loss"][-1] < h1["loss"][0]
    for a, b in zip(w1, w2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_swapped_student_and_teacher_are_caught(teacher):
    """kdplug's Distiller takes the student first, Keras' the teacher first:
    a swap is an error where it shows (same model, nothing to train)."""
    student = truncated_bert(teacher, [1], num_classes=2)
    terms = [HardLabelCrossEntropy()]
    with pytest.raises(KdplugError, match="same model.*student first"):
        Distiller(teacher, teacher, terms)
    frozen = truncated_bert(teacher, [1], num_classes=2)
    frozen.trainable = False
    with pytest.raises(KdplugError, match="no trainable weights.*by keyword"):
        Distiller(frozen, teacher, terms)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Distiller(student=student, teacher=teacher, terms=terms)


@pytest.mark.slow
def test_logged_accuracy_counts_labelled_examples_only():
    """An example without a gold label (-1: augmented, or an unlabelled
    stage) is left out of the logged accuracy (Keras passes sample weights
    to `weighted_metrics` only; compiled as plain metrics, it counted as
    class 0)."""
    teacher = testing.tiny_bert_classifier(seed=1)
    student = testing.tiny_bert_classifier(seed=2)
    distiller = Distiller(student, teacher, [SoftTargetCrossEntropy()])
    distiller.compile(optimizer="adam", jit_compile=False, metrics=[
        keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    x, y = testing.toy_batch(8, seed=5)
    predicted = np.argmax(keras.ops.convert_to_numpy(student(x, training=False)), -1)
    labels = np.asarray(predicted).copy()
    labels[:3] = 1 - labels[:3]  # 3 of the labelled examples wrong
    labels[6:] = -1  # 2 unlabelled
    result = distiller.test_on_batch(x, labels, return_dict=True)
    assert result["accuracy"] == pytest.approx(3 / 6)
    result = distiller.test_on_batch(x, np.full(8, -1), return_dict=True)
    assert result["accuracy"] == 0.0  # nothing labelled: nothing counted


@pytest.mark.slow
def test_a_student_with_another_class_count_is_named_before_any_op_fails():
    """A 3-class student against a 2-class teacher: the logit terms say so
    (term, tap, both shapes) instead of a failed `Mul` in the trace; the
    same from `kdplug.distill`, which also names a train_data that is not
    data (a file name) and epochs < 1."""
    import kdplug

    teacher = testing.tiny_bert_classifier(num_classes=2, seed=1)
    student = testing.tiny_bert_classifier(num_classes=3, seed=2)
    distiller = Distiller(student, teacher, kd_terms())
    distiller.compile(optimizer="adam", jit_compile=False)
    x, y = testing.toy_batch(8)
    with pytest.raises(KdplugError) as caught:
        distiller.test_on_batch(x, y)
    assert str(caught.value) == (
        "soft_ce: the teacher's 'logits' has shape (8, 2) and the student's "
        "(8, 3); the term compares them output by output, so the student "
        "needs the teacher's 2 outputs (e.g. data.num_classes, or a head of "
        "that size)")
    data = testing.toy_dataset(16, 8)
    with pytest.raises(KdplugError, match="teacher's 'logits' has shape"):
        kdplug.distill(teacher=teacher, student=student, train_data=data, verbose=0)
    with pytest.raises(ValueError, match="train_data must be a tf.data.Dataset, .* "
                                         "got str"):
        kdplug.distill(teacher=teacher, student=student, train_data="data.tsv")
    with pytest.raises(ConfigError, match=r"^epochs: must be in \[1, 10000\] \(got 0\)$"):
        kdplug.distill(teacher=teacher, student=student, train_data=data, epochs=0)
