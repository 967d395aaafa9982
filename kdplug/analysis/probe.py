"""Probing classifiers: what a frozen representation knows.

A probe is a small classifier trained on a model's frozen sentence vectors
(one layer's output) to predict a property of the sentence: its length, a
word it contains, whether two words were swapped, its syntactic depth... If
a *simple* probe predicts the property well from a layer, the layer encodes
it in an accessible form. Conneau, Kruszewski, Lample, Barrault & Baroni
(2018), *What you can cram into a single $&!#* vector: Probing sentence
embeddings for linguistic properties* (ACL), introduced the probing tasks
and the logistic-regression / one-hidden-layer-MLP probes used here; Tenney
et al. (2019), *What do you learn from context? Probing for sentence
structure in contextualized word representations* (ICLR), probe every layer
of a contextual encoder the same way. Sučík's thesis ("Distilling BERT into
small students", "Analysing the students") probes the teacher's and each
student's layers to see what distillation kept.

Everything is scikit-learn on numpy arrays; features are standardised with a
`StandardScaler` fit on the training split only. Probes get a fixed budget
(`max_iter`) and a seed, so results are reproducible and comparable between
layers and models; not converging within the budget is expected and not
reported as a warning (`ProbeResult.iterations` says how many were used).

Examples:

```python
from kdplug.analysis.probe import probe_layers, train_probe

result = train_probe(train_x, train_y, test_x, test_y, kind="mlp", seed=1)
result.test_accuracy

table = probe_layers(
    {"layer_1": {"train": x1_train, "dev": None, "test": x1_test},
     "layer_2": {"train": x2_train, "dev": None, "test": x2_test}},
    {"train": y_train, "dev": None, "test": y_test},
    kind="logistic", seeds=(0, 1, 2))
table["layer_2"]["test_accuracy"], table["layer_2"]["test_std"]
```
"""

import dataclasses
import warnings

import numpy as np

#: The probe kinds `train_probe` knows.
KINDS = ("logistic", "mlp")

#: Inverse L2 strength of the logistic probe (scikit-learn's default), fixed
#: rather than tuned so that every layer gets the same probe.
LOGISTIC_C = 1.0


@dataclasses.dataclass
class ProbeResult:
    """One probe's accuracies.

    Attributes:
        train_accuracy: accuracy on the training split.
        dev_accuracy: accuracy on the dev split, None without one.
        test_accuracy: accuracy on the test split.
        seed: the probe's random seed.
        kind: `"logistic"` or `"mlp"`.
        iterations: optimiser iterations used (scikit-learn's `n_iter_`; an
            MLP's epochs), at most `max_iter`.

    Examples:

    ```python
    result = train_probe(train_x, train_y, test_x, test_y, seed=3)
    dataclasses.asdict(result)
    # {"train_accuracy": 0.91, "dev_accuracy": None, "test_accuracy": 0.88,
    #  "seed": 3, "kind": "logistic", "iterations": 57}
    ```
    """

    train_accuracy: float
    dev_accuracy: float | None
    test_accuracy: float
    seed: int
    kind: str
    iterations: int


def _check_x(name, x):
    try:
        x = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-D float array (examples, features), "
                         f"could not convert it to float") from None
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D float array (examples, features) "
                         f"with at least one of each, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite, found "
                         f"{int((~np.isfinite(x)).sum())} NaN/inf values")
    return x


def _check_y(name, y, n, x_name):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of class ids with one per row "
                         f"of {x_name} ({n}), got shape {y.shape}")
    if y.dtype.kind == "f" and np.isfinite(y).all() and (y == np.round(y)).all():
        y = y.astype(np.int64)
    if y.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer class ids, got dtype {y.dtype}")
    return y


def subsample_rows(labels, fraction, seed):
    """Sorted row indices of a seeded stratified subsample: `fraction` of each
    class's rows (rounded, at least one).

    >>> subsample_rows(np.array([0, 0, 0, 0, 1, 1]), 0.5, seed=0).size
    3
    """
    rng = np.random.default_rng(seed)
    picked = []
    for c in np.unique(labels):
        rows = np.flatnonzero(labels == c)
        k = max(1, int(round(fraction * rows.size)))
        picked.append(rng.choice(rows, k, replace=False))
    return np.sort(np.concatenate(picked))


def _make(kind, seed, max_iter, hidden_dim):
    if kind == "logistic":
        from sklearn.linear_model import LogisticRegression
        # lbfgs on the multinomial (softmax) loss for any number of classes
        return LogisticRegression(C=LOGISTIC_C, solver="lbfgs", max_iter=max_iter,
                                  random_state=seed)
    from sklearn.neural_network import MLPClassifier
    return MLPClassifier(hidden_layer_sizes=(hidden_dim,), max_iter=max_iter,
                         early_stopping=False, random_state=seed)


def train_probe(train_x, train_y, test_x, test_y, dev_x=None, dev_y=None,
                kind="logistic", seed=0, max_iter=200, hidden_dim=64,
                train_fraction=1.0):
    """Trains one probe on frozen features and scores it (Conneau et al. 2018;
    Tenney et al. 2019).

    Features are standardised, `x' = (x - mean_train) / std_train`, with a
    `StandardScaler` fit on `train_x` only (dev and test never leak into it).
    `kind="logistic"`: multinomial logistic regression (softmax over classes,
    L2 penalty with `C = LOGISTIC_C = 1.0`, lbfgs, `max_iter` iterations).
    `kind="mlp"`: one hidden layer of `hidden_dim` ReLU units, softmax output,
    Adam for at most `max_iter` epochs (scikit-learn still stops when the
    training loss stalls), no early stopping on held-out data. Both are
    seeded with `seed`; the budget is fixed on purpose, so scikit-learn's
    `ConvergenceWarning` is silenced. With `train_fraction < 1` the probe
    fits on a subsample drawn with `seed` (that share of each class's
    training rows, at least one per class): lbfgs is deterministic, so this
    is what makes several seeds of a logistic probe differ, and their spread
    measures how much the result depends on the training sample.

    Args:
        train_x: `(n_train, d)` features.
        train_y: `(n_train,)` integer labels, at least two classes.
        test_x: `(n_test, d)` features.
        test_y: `(n_test,)` integer labels.
        dev_x: `(n_dev, d)` features or None (then `dev_y` must be None too).
        dev_y: `(n_dev,)` integer labels or None.
        kind: `"logistic"` or `"mlp"`.
        seed: random seed of the probe.
        max_iter: the iteration budget (lbfgs iterations / MLP epochs).
        hidden_dim: the MLP's hidden units (ignored by `"logistic"`).
        train_fraction: the share of the training rows each seed fits on,
            in (0, 1].

    Returns:
        A `ProbeResult`.

    Examples:

    ```python
    result = train_probe(train_x, train_y, test_x, test_y, kind="logistic")
    result.test_accuracy, result.iterations
    ```
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, "
                         f"got {kind!r}")
    for name, value, low in (("max_iter", max_iter, 1), ("hidden_dim", hidden_dim, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    train_x = _check_x("train_x", train_x)
    train_y = _check_y("train_y", train_y, train_x.shape[0], "train_x")
    test_x = _check_x("test_x", test_x)
    test_y = _check_y("test_y", test_y, test_x.shape[0], "test_x")
    if (dev_x is None) != (dev_y is None):
        raise ValueError("dev_x and dev_y must be given together (or both None)")
    if dev_x is not None:
        dev_x = _check_x("dev_x", dev_x)
        dev_y = _check_y("dev_y", dev_y, dev_x.shape[0], "dev_x")
    d = train_x.shape[1]
    for name, x in (("test_x", test_x), ("dev_x", dev_x)):
        if x is not None and x.shape[1] != d:
            raise ValueError(f"{name} must have train_x's {d} features, got "
                             f"{x.shape[1]}")
    classes = np.unique(train_y)
    if classes.size < 2:
        raise ValueError(f"train_y must hold at least 2 classes, got only "
                         f"{classes.tolist()}")
    if not 0 < train_fraction <= 1:
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction!r}")
    if train_fraction < 1:
        rows = subsample_rows(train_y, train_fraction, seed)
        train_x, train_y = train_x[rows], train_y[rows]

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(train_x)
    model = _make(kind, int(seed), int(max_iter), int(hidden_dim))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(scaler.transform(train_x), train_y)

    def score(x, y):
        return float(np.mean(model.predict(scaler.transform(x)) == y))

    return ProbeResult(
        train_accuracy=score(train_x, train_y),
        dev_accuracy=None if dev_x is None else score(dev_x, dev_y),
        test_accuracy=score(test_x, test_y),
        seed=int(seed),
        kind=kind,
        iterations=int(np.max(model.n_iter_)),
    )


def probe_layers(features, labels, kind="logistic", seeds=(0,), **kwargs):
    """Probes every layer with the same probe and seeds.

    For each layer and each seed, `train_probe` on that layer's features and
    the shared labels; a layer's `test_accuracy` is the mean over seeds and
    `test_std` the sample standard deviation (`ddof=1`; 0.0 for one seed),
    which measures the probe's own seed-to-seed noise, not the noise of the
    test sample.

    Args:
        features: `{layer name: {"train": (n_train, d), "dev": (n_dev, d) or
            None, "test": (n_test, d)}}`; `d` may differ between layers.
        labels: `{"train": (n_train,), "dev": (n_dev,) or None, "test":
            (n_test,)}` integer class ids, shared by every layer.
        kind: `"logistic"` or `"mlp"`.
        seeds: the probe seeds (at least one).
        **kwargs: passed to `train_probe` (`max_iter`, `hidden_dim`,
            `train_fraction`).

    Returns:
        `{layer name: {"test_accuracy", "test_std", "dev_accuracy" (None
        without dev data), "train_accuracy", "seeds": [ProbeResult as a dict
        per seed]}}`, layers in the order of `features`.

    Examples:

    ```python
    table = probe_layers({"embeddings": {"train": e_tr, "test": e_te},
                          "layer_6": {"train": h_tr, "test": h_te}},
                         {"train": y_tr, "test": y_te}, seeds=(0, 1, 2))
    table["layer_6"]["test_accuracy"]
    ```
    """
    if not isinstance(features, dict) or not features:
        raise ValueError("features must be a non-empty dict {layer name: "
                         "{'train': array, 'dev': array or None, 'test': array}}")
    if not isinstance(labels, dict) or labels.get("train") is None \
            or labels.get("test") is None:
        raise ValueError("labels must be a dict with 'train' and 'test' label arrays "
                         "(and 'dev', an array or None)")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must hold at least one seed, got none")
    unknown = set(kwargs) - {"max_iter", "hidden_dim", "train_fraction"}
    if unknown:
        raise ValueError(f"unknown probe options {sorted(unknown)}; "
                         f"expected 'max_iter', 'hidden_dim', 'train_fraction'")
    table = {}
    for layer, split in features.items():
        if not isinstance(split, dict) or split.get("train") is None \
                or split.get("test") is None:
            raise ValueError(f"features[{layer!r}] must be a dict with 'train' and "
                             f"'test' arrays (and 'dev', an array or None)")
        dev_x, dev_y = split.get("dev"), labels.get("dev")
        if (dev_x is None) != (dev_y is None):
            raise ValueError(f"features[{layer!r}]['dev'] and labels['dev'] must be "
                             f"given together (or both None)")
        results = [train_probe(split["train"], labels["train"], split["test"],
                               labels["test"], dev_x, dev_y, kind=kind, seed=seed,
                               **kwargs)
                   for seed in seeds]
        test = np.array([r.test_accuracy for r in results])
        table[layer] = {
            "test_accuracy": float(test.mean()),
            "test_std": float(test.std(ddof=1)) if len(results) > 1 else 0.0,
            "dev_accuracy": None if dev_x is None else float(
                np.mean([r.dev_accuracy for r in results])),
            "train_accuracy": float(np.mean([r.train_accuracy for r in results])),
            "seeds": [dataclasses.asdict(r) for r in results],
        }
    return table
