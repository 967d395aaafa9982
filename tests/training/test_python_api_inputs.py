"""The Python API takes every input form `keras.distillation.Distiller`
takes (issue #51, item 2): one tensor, a tuple or list of inputs, a dict,
numpy arrays, `tf.data`, a Python generator and a `PyDataset`, for models
with one input, several inputs or dict inputs; cached teacher outputs ride
along in dict features. Plus the Python API's noise (item 7): no TensorFlow
start-up lines on `import kdplug` + a TensorFlow-backed name, and no Keras
`shuffle=True ... ignored` warning from `distill()` on a dataset.

Every model here is a tiny plain Keras model (Dense / Embedding) on a
linearly separable toy task: the teacher is exact (its weights are set,
not trained), the student starts from random weights and must learn from it
through `distill()` or `Distiller.fit`."""

import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import kdplug
from kdplug import KdplugError
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy

WIDTHS = {"a": 6, "b": 4}
ROWS = 256


def toy_task(seed=0, rows=ROWS):
    """`({"a": (rows, 6), "b": (rows, 4)}, labels, weights)`: the label is
    the sign of a fixed linear function of both inputs."""
    rng = np.random.default_rng(seed)
    x = {name: rng.normal(size=(rows, width)).astype("float32")
         for name, width in WIDTHS.items()}
    w = np.random.default_rng(99).normal(size=(sum(WIDTHS.values()),)).astype("float32")
    score = np.concatenate([x["a"], x["b"]], axis=-1) @ w
    return x, (score > 0).astype("int32"), w


def exact_teacher(w, inputs):
    """A teacher that knows the task: logits `[-s, s]` for the score `s`
    (its weights set, not trained). `inputs`: `"one"` (a single input
    named `a`, the two parts concatenated), `"list"` or `"dict"`."""
    def head():
        return keras.layers.Dense(2, use_bias=False, name="head")

    if inputs == "one":
        x = keras.Input((sum(WIDTHS.values()),), name="a")
        model = keras.Model(x, head()(x), name="teacher")
    else:
        a, b = keras.Input((WIDTHS["a"],), name="a"), keras.Input((WIDTHS["b"],), name="b")
        joined = keras.layers.Concatenate()([a, b])
        model = keras.Model({"a": a, "b": b} if inputs == "dict" else [a, b],
                            head()(joined), name="teacher")
    model.get_layer("head").set_weights([np.stack([-w, w], axis=-1) * 2.0])
    return model


def student(inputs, seed=1):
    """A small random-initialised student with the same inputs."""
    keras.utils.set_random_seed(seed)
    if inputs == "one":
        x = keras.Input((sum(WIDTHS.values()),), name="a")
        return keras.Model(x, keras.layers.Dense(2)(keras.layers.Dense(8)(x)),
                           name="student")
    a, b = keras.Input((WIDTHS["a"],), name="a"), keras.Input((WIDTHS["b"],), name="b")
    hidden = keras.layers.Dense(8)(keras.layers.Concatenate()([a, b]))
    return keras.Model({"a": a, "b": b} if inputs == "dict" else [a, b],
                       keras.layers.Dense(2)(hidden), name="student")


def features(x, inputs):
    """The toy inputs in the form a model of `inputs` reads."""
    if inputs == "one":
        return np.concatenate([x["a"], x["b"]], axis=-1)
    return x if inputs == "dict" else (x["a"], x["b"])


def accuracy(model, x, y):
    return float(np.mean(np.argmax(model.predict(x, verbose=0), -1) == y))


def check_learned(history, model, x, y, baseline):
    """The loss went down and the student beats the majority class and its
    own untrained self, reaching 85% on held-out examples."""
    losses = history.history["loss"]
    assert losses[-1] < losses[0]
    assert accuracy(model, x, y) >= max(baseline, np.mean(y), 1 - np.mean(y), 0.85)


def held_out(inputs):
    x, y, _ = toy_task(seed=7, rows=200)
    return features(x, inputs), y


def distill_on(train_data, inputs, **kwargs):
    """`kdplug.distill` of a fresh student from the exact teacher on
    `train_data`; asserts it learned."""
    _, _, w = toy_task()
    model = student(inputs)
    x_test, y_test = held_out(inputs)
    baseline = accuracy(model, x_test, y_test)
    history = kdplug.distill(teacher=exact_teacher(w, inputs), student=model,
                             train_data=train_data, learning_rate=3e-2,
                             verbose=0, **{"epochs": 4, **kwargs})
    check_learned(history, model, x_test, y_test, baseline)
    return history


@pytest.mark.parametrize("inputs", ["one", "list", "dict"])
def test_distill_takes_a_tf_data_dataset_of_any_input_structure(inputs):
    x, y, _ = toy_task()
    data = tf.data.Dataset.from_tensor_slices((features(x, inputs), y)).batch(16)
    distill_on(data, inputs)


@pytest.mark.parametrize("inputs", ["one", "list", "dict"])
def test_distill_takes_numpy_arrays_as_x_y(inputs):
    x, y, _ = toy_task()
    distill_on((features(x, inputs), y), inputs, batch_size=16)


def test_distill_takes_sample_weights_with_numpy_arrays():
    x, y, _ = toy_task()
    distill_on((features(x, "one"), y, np.ones(ROWS, "float32")), "one", batch_size=16)


def test_distill_takes_a_generator_with_steps_per_epoch():
    x, y, _ = toy_task()
    one = features(x, "one")

    def batches():
        while True:
            for start in range(0, ROWS, 16):
                yield one[start:start + 16], y[start:start + 16]

    distill_on(batches(), "one", steps_per_epoch=ROWS // 16)
    with pytest.raises(ValueError, match="a Python generator has no length; pass "
                                         "steps_per_epoch"):
        kdplug.distill(teacher=exact_teacher(toy_task()[2], "one"),
                       student=student("one"), train_data=batches())


def test_distill_takes_a_py_dataset():
    x, y, _ = toy_task()
    one = features(x, "one")

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return ROWS // 16

        def __getitem__(self, index):
            return one[index * 16:(index + 1) * 16], y[index * 16:(index + 1) * 16]

    distill_on(Batches(), "one")


@pytest.mark.slow
def test_distill_takes_int_token_ids_for_embedding_models():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, size=(ROWS + 200, 6)).astype("int32")
    y = (np.sum(ids < 10, axis=-1) >= 3).astype("int32")  # about half small ids

    def bag(name, seed):
        keras.utils.set_random_seed(seed)
        inp = keras.Input((6,), dtype="int32")
        x = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(20, 8)(inp))
        return keras.Model(inp, keras.layers.Dense(2)(x), name=name)

    teacher = bag("teacher", 0)
    teacher.compile(optimizer=keras.optimizers.Adam(3e-2), jit_compile=False,
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    teacher.fit(ids[:ROWS], y[:ROWS], epochs=10, batch_size=32, verbose=0)
    model = bag("student", 1)
    baseline = accuracy(model, ids[ROWS:], y[ROWS:])
    history = kdplug.distill(teacher=teacher, student=model,
                             train_data=(ids[:ROWS], y[:ROWS]), epochs=8,
                             learning_rate=3e-2, batch_size=32, verbose=0)
    check_learned(history, model, ids[ROWS:], y[ROWS:], baseline)


@pytest.mark.parametrize("inputs", ["one", "list", "dict"])
def test_distiller_fit_takes_numpy_arrays(inputs):
    x, y, w = toy_task()
    model = student(inputs)
    x_test, y_test = held_out(inputs)
    baseline = accuracy(model, x_test, y_test)
    distiller = kdplug.Distiller(student=model, teacher=exact_teacher(w, inputs), terms=[
        SoftTargetCrossEntropy(temperature=2.0, weight=0.5),
        HardLabelCrossEntropy(weight=0.5)])
    distiller.compile(optimizer=keras.optimizers.Adam(3e-2), metrics=["accuracy"],
                      jit_compile=False)
    history = distiller.fit(features(x, inputs), y, batch_size=16, epochs=4, verbose=0)
    check_learned(history, model, x_test, y_test, baseline)
    assert history.history["accuracy"][-1] > 0.85
    assert distiller.predict(x_test, verbose=0).shape == (200, 2)


def test_cached_teacher_outputs_ride_in_dict_features_without_a_teacher():
    """Dict features carry `teacher/logits` beside a single-input model's
    input (whatever its name): no teacher model is needed."""
    x, y, w = toy_task()
    one = features(x, "one")
    cached = exact_teacher(w, "one").predict(one, verbose=0)
    model = student("one")
    x_test, y_test = held_out("one")
    baseline = accuracy(model, x_test, y_test)
    data = tf.data.Dataset.from_tensor_slices(
        ({"inputs": one, "teacher/logits": cached}, y)).batch(16)
    history = kdplug.distill(teacher=None, student=model, train_data=data, epochs=4,
                             learning_rate=3e-2, verbose=0)
    check_learned(history, model, x_test, y_test, baseline)


def test_dict_features_a_model_cannot_read_are_named():
    x, y, w = toy_task(rows=16)
    model = student("list")
    distiller = kdplug.Distiller(student=model, teacher=exact_teacher(w, "list"),
                                 terms=[SoftTargetCrossEntropy()])
    distiller.compile(optimizer="adam", jit_compile=False)
    with pytest.raises(KdplugError, match="model 'teacher' reads an input named 'b', "
                                          "and the batch has a, c"):
        distiller.fit({"a": x["a"], "c": x["b"]}, y, epochs=1, verbose=0)


def test_distill_on_a_dataset_warns_nothing():
    x, y, w = toy_task(rows=32)
    data = tf.data.Dataset.from_tensor_slices((features(x, "one"), y)).batch(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kdplug.distill(teacher=exact_teacher(w, "one"), student=student("one"),
                       train_data=data, epochs=1, verbose=0)


@pytest.mark.slow
def test_importing_a_tensorflow_backed_name_prints_nothing():
    """`import kdplug; kdplug.Distiller` prints none of TensorFlow's C++
    start-up lines (the CLI hid them already); a level the user set is
    theirs."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    code = ("import os, kdplug; kdplug.Distiller; "
            "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    quiet = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True)
    assert quiet.stderr == "" and quiet.stdout == "3\n"
    mine = subprocess.run(  # (no TensorFlow needed to see it kept)
        [sys.executable, "-c", code.replace(" kdplug.Distiller;", "")],
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "1"}, capture_output=True, text=True,
        check=True)
    assert mine.stdout == "1\n"
