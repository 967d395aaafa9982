"""Measuring models: parameters, predictions, accuracy, latency.

Examples:

```python
count_params(student)
accuracy(student, test_ds)                       # labels < 0 are skipped
outputs, labels = predict_outputs(student, test_ds)
latency_ms(student, first_examples(test_ds, 1))  # {"median", "min", "max"}
time_ms(lambda: predict(batch), runs=20)
forward_function(student)(features)              # the traced forward pass they share
```
"""

import statistics
import time
import weakref

import numpy as np
import tensorflow as tf

from kdplug.config.sections import EvaluationConfig
from kdplug.data.length_buckets import read_by_length

LATENCY_RUNS = EvaluationConfig.latency_runs  # `evaluation.latency_runs`' default
_FORWARDS = weakref.WeakKeyDictionary()  # model -> {(tap, jit): tf.function}


def count_params(model):
    """Parameters of a model (random-seed state excluded)."""
    return int(
        sum(np.prod(w.shape) for w in model.weights if "seed_generator" not in w.path)
    )


def masked_accuracy(outputs, labels):
    """`(correct, counted)`: top-1 hits of `outputs` (logits or
    probabilities, `(n, C)`) against `labels`, skipping labels `< 0`
    (examples without a gold label).

    >>> masked_accuracy(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]),
    ...                 np.array([1, 1, -1]))
    (1, 2)
    """
    labels = np.asarray(labels).astype("int64")
    keep = labels >= 0
    pred = np.argmax(np.asarray(outputs), axis=-1)
    return int((pred[keep] == labels[keep]).sum()), int(keep.sum())


def predict_outputs(model, dataset, tap=None, jit_compile=False, length_buckets=None):
    """Runs `model` over a `(features, labels)` dataset.

    Args:
        model: a Keras model returning outputs, or (with `tap`) a model with
            `taps()`.
        dataset: batched `(features, labels)`.
        tap: e.g. `"logits/sst"` to read one head of a multi-task student.
        jit_compile: XLA-compile the forward pass.
        length_buckets: a `kdplug.data.length_buckets.LengthBuckets` (a
            run's `training.length_buckets`): the dataset's examples are
            read in batches of similar length, each cut to its longest one
            (`kdplug.data.length_buckets.read_by_length`: the whole split
            sorted, the dataset's batch size, widths rounded up to
            `length_buckets.multiple`; an XLA-compiled pass compiles one
            shape per width), and the outputs come back in the dataset's
            order, per-token outputs padded back to the padded length: the
            padded pass's outputs within float tolerance. The dataset must
            be padded (every batch one length). None: the batches as they
            are.

    Returns:
        `(outputs, labels)` as numpy arrays, in dataset order.

    Examples:

    ```python
    outputs, labels = predict_outputs(student, test_ds)
    same, _ = predict_outputs(student, test_ds, length_buckets=LengthBuckets())
    ```
    """
    forward = forward_function(model, tap, jit_compile)
    if length_buckets is not None:
        name = "logits" if tap is None or tap.startswith("logits") else tap
        outputs, labels = read_by_length(lambda x: {name: forward(x)}, dataset,
                                         length_buckets.multiple)
        return outputs[name].astype("float32"), labels
    outputs, labels = [], []
    for x, y in dataset:
        outputs.append(np.asarray(forward(x), dtype="float32"))
        labels.append(np.asarray(y))
    return np.concatenate(outputs), np.concatenate(labels)


def forward_function(model, tap=None, jit_compile=False):
    """`model`'s traced forward pass (`training=False`), one per model, tap
    and XLA setting while the model lives, so that what measures one model
    in a run shares one trace: its predictions (the teacher after its
    fine-tuning and again on the test split, the validation metrics of
    every epoch), its latency and the `keras` export format. Its first
    call traces it with the batch dimension left open, so one trace serves
    every batch size (a split's last, smaller batch, batch-1 latency);
    inputs of another structure or dtype trace again. The function reads
    the model through a weak reference, so the cache does not keep the
    model alive.

    Args:
        model: a Keras model (or a `fn(inputs, training=False)`); with
            `tap`, a model with `taps()`.
        tap: e.g. `"logits/sst"`: the function returns that tap.
        jit_compile: XLA-compile the forward pass.

    Examples:

    ```python
    forward = forward_function(student)
    logits = forward(features)  # features: the model's input dict
    ```
    """
    cache = _FORWARDS.setdefault(model, {})
    key = (tap, bool(jit_compile))
    if key not in cache:
        ref = weakref.ref(model)
        if tap is None:
            fn = lambda x: ref()(x, training=False)  # noqa: E731
        else:
            fn = lambda x: ref().taps(x, [tap], training=False)[tap]  # noqa: E731
        cache[key] = any_batch(tf.function(fn, jit_compile=jit_compile,
                                           reduce_retracing=True, autograph=False))
    return cache[key]


def any_batch(function):
    """`function` (a `tf.function` of one input structure), traced at its
    first call for inputs like that call's with any batch size, so that a
    dataset's smaller last batch traces nothing new; the `tf.function` is
    the result's `function` attribute. (An XLA-compiled function still
    compiles once per batch shape.)

    Args:
        function: a `tf.function` taking one structure of tensors whose
            first dimension is the batch.

    Examples:

    ```python
    forward = any_batch(tf.function(lambda x: model(x, training=False)))
    forward(batch_of_32), forward(batch_of_5)  # one trace
    ```
    """

    def call(x):
        if not function.experimental_get_tracing_count():
            function.get_concrete_function(tf.nest.map_structure(_batch_open, x))
        return function(x)

    call.function = function
    return call


def _batch_open(value):
    spec = tf.type_spec_from_value(tf.convert_to_tensor(value))
    if spec.shape.rank:
        spec = tf.TensorSpec([None, *spec.shape[1:]], spec.dtype)
    return spec


def accuracy(model, dataset, jit_compile=True, length_buckets=None):
    """Top-1 accuracy of a logits model on a `(features, labels)` dataset;
    examples with label `< 0` are left out (`jit_compile`: XLA-compile the
    forward pass, worth it on a large split; `length_buckets`: read it by
    length, see `predict_outputs`)."""
    outputs, labels = predict_outputs(model, dataset, jit_compile=jit_compile,
                                      length_buckets=length_buckets)
    correct, total = masked_accuracy(outputs, labels)
    return correct / max(total, 1)


def time_ms(fn, runs=20, warmup=3):
    """Median / min / max wall time of `fn()` in milliseconds, after
    `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def latency_ms(model, features, runs=LATENCY_RUNS, warmup=5, tap=None):
    """Median / min / max wall time of one forward pass, in milliseconds
    (the model's `forward_function`, without XLA: the trace its
    predictions made is reused when they ran without XLA too).

    Args:
        model: a Keras model (or a `fn(inputs, training=False)`).
        features: one input batch (its batch size is what is measured).
        runs: timed passes (`evaluation.latency_runs`).
        warmup: untimed passes first (tracing, allocation).
        tap: time the pass up to this tap (a model with `taps()`).
    """
    forward = forward_function(model, tap)
    return time_ms(lambda: np.asarray(forward(features)), runs, warmup)


def first_examples(dataset, n):
    """The first `n` examples' features of a batched dataset."""
    x, _ = next(iter(dataset.unbatch().batch(n)))
    return x
