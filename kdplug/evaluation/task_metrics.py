"""Task metrics: accuracy (classification), Pearson / Spearman / MSE
(regression), computed from a model's outputs and the gold labels."""

import numpy as np

from kdplug.evaluation.measure import masked_accuracy

PRIMARY = {"classification": "accuracy", "regression": "pearson"}


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
    correct, counted = masked_accuracy(outputs, labels)
    return {
        "accuracy": correct / counted if counted else 0.0,
        "examples": counted,
    }
