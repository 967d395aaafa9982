"""Per-task metrics: accuracy (classification), Pearson/Spearman (regression)."""

import numpy as np
import tensorflow as tf

PRIMARY = {"classification": "accuracy", "regression": "pearson"}


def predict_outputs(model, dataset, tap=None):
    """Runs `model` over a `(features, labels)` dataset.

    Args:
        model: a Keras model returning outputs, or (with `tap`) a model with
            `taps()`.
        dataset: batched `(features, labels)`.
        tap: e.g. `"logits/sst"` to read one head of a multi-task student.

    Returns:
        `(outputs, labels)` as numpy arrays, in dataset order.
    """
    if tap is None:
        fn = lambda x: model(x, training=False)  # noqa: E731
    else:
        fn = lambda x: model.taps(x, [tap], training=False)[tap]  # noqa: E731
    forward = tf.function(fn, reduce_retracing=True)
    outputs, labels = [], []
    for x, y in dataset:
        outputs.append(np.asarray(forward(x), dtype="float32"))
        labels.append(np.asarray(y))
    return np.concatenate(outputs), np.concatenate(labels)


def rank(values):
    """Ranks starting at 1, ties sharing their average rank (as Spearman's
    rho needs).

    >>> rank([10.0, 30.0, 20.0, 20.0]).tolist()
    [1.0, 4.0, 2.5, 2.5]
    """
    values = np.asarray(values, dtype="float64")
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype="float64")
    ranks[order] = np.arange(1, len(values) + 1)
    unique, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def pearson(a, b):
    """Pearson correlation; 0.0 when either side is constant."""
    a = np.asarray(a, dtype="float64")
    b = np.asarray(b, dtype="float64")
    a, b = a - a.mean(), b - b.mean()
    denom = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denom) if denom > 0 else 0.0


def spearman(a, b):
    """Spearman's rank correlation (Pearson of average ranks)."""
    return pearson(rank(a), rank(b))


def task_metrics(task_type, outputs, labels):
    """Metrics of one task's outputs.

    Args:
        task_type: `classification` (outputs are logits or probabilities,
            `(n, C)`; labels class ids, `-1` ignored) or `regression`
            (outputs `(n,)` or `(n, 1)`; labels targets).

    Returns:
        `{"accuracy"}` or `{"pearson", "spearman", "mse"}`, plus `"examples"`.

    Examples:

    >>> outputs, labels = np.array([[1.0], [2.0], [3.0]]), np.array([1.0, 2.0, 4.0])
    >>> task_metrics("regression", outputs, labels)["spearman"]
    1.0
    """
    outputs = np.asarray(outputs)
    labels = np.asarray(labels)
    if task_type == "regression":
        pred = outputs.reshape(len(outputs), -1)[:, 0].astype("float64")
        gold = labels.astype("float64")
        return {
            "pearson": pearson(pred, gold),
            "spearman": spearman(pred, gold),
            "mse": float(np.mean((pred - gold) ** 2)),
            "examples": int(len(gold)),
        }
    gold = labels.astype("int64")
    keep = gold >= 0
    pred = np.argmax(outputs, axis=-1)
    return {
        "accuracy": float((pred[keep] == gold[keep]).mean()) if keep.any() else 0.0,
        "examples": int(keep.sum()),
    }
