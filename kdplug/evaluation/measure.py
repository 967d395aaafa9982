"""Measuring models: parameters, predictions, accuracy, latency.

Examples:

```python
count_params(student)
accuracy(student, test_ds)                       # labels < 0 are skipped
outputs, labels = predict_outputs(student, test_ds)
latency_ms(student, first_examples(test_ds, 1))  # {"median", "min", "max"}
time_ms(lambda: predict(batch), runs=20)
```
"""

import statistics
import time
import weakref

import numpy as np
import tensorflow as tf

LATENCY_RUNS = 30
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


def predict_outputs(model, dataset, tap=None, jit_compile=False):
    """Runs `model` over a `(features, labels)` dataset.

    Args:
        model: a Keras model returning outputs, or (with `tap`) a model with
            `taps()`.
        dataset: batched `(features, labels)`.
        tap: e.g. `"logits/sst"` to read one head of a multi-task student.
        jit_compile: XLA-compile the forward pass.

    Returns:
        `(outputs, labels)` as numpy arrays, in dataset order.
    """
    forward = _forward(model, tap, jit_compile)
    outputs, labels = [], []
    for x, y in dataset:
        outputs.append(np.asarray(forward(x), dtype="float32"))
        labels.append(np.asarray(y))
    return np.concatenate(outputs), np.concatenate(labels)


def _forward(model, tap, jit_compile):
    """`model`'s traced forward pass, one per model, tap and XLA setting
    while the model lives: a model measured several times in a run (the
    teacher after its fine-tuning and again on the test split) is traced
    and XLA-compiled once. The function reads the model through a weak
    reference, so the cache does not keep the model alive."""
    cache = _FORWARDS.setdefault(model, {})
    key = (tap, bool(jit_compile))
    if key not in cache:
        ref = weakref.ref(model)
        if tap is None:
            fn = lambda x: ref()(x, training=False)  # noqa: E731
        else:
            fn = lambda x: ref().taps(x, [tap], training=False)[tap]  # noqa: E731
        cache[key] = tf.function(fn, jit_compile=jit_compile, reduce_retracing=True,
                                 autograph=False)
    return cache[key]


def accuracy(model, dataset, jit_compile=True):
    """Top-1 accuracy of a logits model on a `(features, labels)` dataset;
    examples with label `< 0` are left out (`jit_compile`: XLA-compile the
    forward pass, worth it on a large split)."""
    outputs, labels = predict_outputs(model, dataset, jit_compile=jit_compile)
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


def latency_ms(model, features, runs=LATENCY_RUNS, warmup=5):
    """Median / min / max wall time of one forward pass, in milliseconds.

    Args:
        model: a Keras model (or a `fn(inputs, training=False)`).
        features: one input batch (its batch size is what is measured).
    """
    forward = tf.function(lambda x: model(x, training=False), reduce_retracing=True,
                          autograph=False)
    return time_ms(lambda: forward(features).numpy(), runs, warmup)


def first_examples(dataset, n):
    """The first `n` examples' features of a batched dataset."""
    x, _ = next(iter(dataset.unbatch().batch(n)))
    return x
