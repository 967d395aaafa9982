"""Task metrics: accuracy, F1 (macro / micro) and Matthews correlation
(classification), Pearson / Spearman / MSE (regression), F1 and exact match
(multi-label), computed from a model's outputs and the gold labels with
scikit-learn and SciPy.

Examples:

```python
metric_values(["accuracy", "f1_macro", "mcc"], logits, labels)
# {"accuracy": 0.8, "f1_macro": 0.79, "mcc": 0.6}
```
"""

import numpy as np
from scipy import stats
from sklearn import metrics as sk



def rank(values):
    """Ranks starting at 1, ties sharing their average rank (as Spearman's
    rho needs).

    >>> rank([10.0, 30.0, 20.0, 20.0]).tolist()
    [1.0, 4.0, 2.5, 2.5]
    """
    return stats.rankdata(np.asarray(values, dtype="float64"), method="average")


def pearson(a, b):
    """Pearson correlation; 0.0 when either side is constant (or there are
    fewer than two values).

    >>> pearson([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]) > 0.99
    True
    >>> pearson([1.0, 1.0, 1.0], [2.0, 4.0, 7.0])
    0.0
    """
    return _correlation(stats.pearsonr, a, b)


def spearman(a, b):
    """Spearman's rank correlation; 0.0 when either side is constant.

    >>> spearman([1.0, 2.0, 3.0], [1.0, 5.0, 4.0])
    0.5
    """
    return _correlation(stats.spearmanr, a, b)


def _correlation(statistic, a, b):
    """`statistic(a, b).statistic` (scipy.stats), 0.0 when either side is
    constant or shorter than two values (where it is undefined)."""
    a = np.asarray(a, dtype="float64")
    b = np.asarray(b, dtype="float64")
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(statistic(a, b).statistic)


def classification_metrics(names, outputs, labels):
    """Classification metrics of logits or probabilities `(n, C)` against
    class ids, skipping labels `< 0` (examples without a gold label); every
    metric is 0.0 when no example has one.

    `f1_macro` averages the per-class F1 over the classes present in the
    gold labels or the predictions (scikit-learn's `f1_score`, a class
    never predicted scores 0); `f1_micro` equals accuracy for single-label
    data; `mcc` is the multi-class Matthews correlation.

    Args:
        names: metric names (`kdplug.config.EvaluationConfig.METRICS`).
        outputs: `(n, C)` array.
        labels: `(n,)` class ids.

    Returns:
        `{name: float}` in the order of `names`.

    >>> classification_metrics(["accuracy", "mcc"], np.eye(2)[[0, 1, 1]],
    ...                        np.array([0, 1, -1]))
    {'accuracy': 1.0, 'mcc': 1.0}
    """
    labels = np.asarray(labels).astype("int64")
    keep = labels >= 0
    gold = labels[keep]
    pred = np.argmax(np.asarray(outputs), axis=-1)[keep]
    if not len(gold):
        return {name: 0.0 for name in names}
    fns = {
        "accuracy": lambda: sk.accuracy_score(gold, pred),
        "f1_macro": lambda: sk.f1_score(gold, pred, average="macro", zero_division=0),
        "f1_micro": lambda: sk.f1_score(gold, pred, average="micro", zero_division=0),
        "mcc": lambda: sk.matthews_corrcoef(gold, pred),
    }
    return {name: float(fns[name]()) for name in names}


def regression_metrics(names, outputs, labels):
    """`pearson`, `spearman`, `mse` of outputs `(n,)` or `(n, 1)` against
    float targets; `{name: float}` in the order of `names`."""
    outputs = np.asarray(outputs)
    pred = outputs.reshape(len(outputs), -1)[:, 0].astype("float64")
    gold = np.asarray(labels).astype("float64")
    fns = {
        "pearson": lambda: pearson(pred, gold),
        "spearman": lambda: spearman(pred, gold),
        "mse": lambda: float(np.mean((pred - gold) ** 2)) if len(gold) else 0.0,
    }
    return {name: float(fns[name]()) for name in names}


def multi_label_metrics(names, outputs, labels):
    """Multi-label metrics of logits `(n, L)` against multi-hot labels
    `(n, L)`; a label is predicted when its logit is above 0 (sigmoid above
    0.5). Rows with a negative label (no gold set) are skipped.

    `f1_micro` pools every (example, label) decision; `f1_macro` averages
    the per-label F1 (a label never present nor predicted scores 0,
    scikit-learn's `zero_division=0`); `exact_match` is the share of
    examples whose whole set is right.

    >>> logits = np.array([[2.0, -1.0], [1.0, 1.0], [-1.0, -1.0]])
    >>> multi_label_metrics(["f1_micro", "exact_match"], logits,
    ...                     np.array([[1, 0], [1, 0], [0, 0]]))
    {'f1_micro': 0.8, 'exact_match': 0.6666666666666666}
    """
    labels = np.asarray(labels)
    keep = np.all(labels >= 0, axis=-1)
    gold = labels[keep].astype("int64")
    pred = (np.asarray(outputs)[keep] > 0).astype("int64")
    if not len(gold):
        return {name: 0.0 for name in names}
    fns = {
        "f1_micro": lambda: sk.f1_score(gold, pred, average="micro", zero_division=0),
        "f1_macro": lambda: sk.f1_score(gold, pred, average="macro", zero_division=0),
        "exact_match": lambda: np.mean(np.all(gold == pred, axis=-1)),
    }
    return {name: float(fns[name]()) for name in names}


def task_metrics(task_type, outputs, labels, extra=()):
    """Metrics of one task's outputs.

    Args:
        task_type: `classification` (outputs are logits or probabilities,
            `(n, C)`; labels class ids, `-1` ignored) or `regression`
            (outputs `(n,)` or `(n, 1)`; labels targets).
        extra: more metric names of that task kind to compute (e.g.
            `evaluation.metrics`' `f1_macro`); the defaults are always there.

    Returns:
        `{"accuracy"}` or `{"pearson", "spearman", "mse"}`, the `extra`
        ones, plus `"examples"`.

    Examples:

    >>> outputs, labels = np.array([[1.0], [2.0], [3.0]]), np.array([1.0, 2.0, 4.0])
    >>> task_metrics("regression", outputs, labels)["spearman"]
    1.0
    """
    outputs = np.asarray(outputs)
    labels = np.asarray(labels)
    if task_type == "regression":
        names = ["pearson", "spearman", "mse"]
        names += [name for name in extra if name not in names]
        values = regression_metrics(names, outputs, labels)
        return {**values, "examples": int(len(labels))}
    counted = int((labels.astype("int64") >= 0).sum())
    names = ["accuracy"] + [name for name in extra if name != "accuracy"]
    return {**classification_metrics(names, outputs, labels), "examples": counted}
