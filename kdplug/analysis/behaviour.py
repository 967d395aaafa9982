"""Teacher vs student behaviour, from their predicted probabilities alone.

Following the "Analysing the students" chapter of Sučík's thesis
("Distilling BERT into small students"): one accuracy number per model does
not say whether the student makes the *same* mistakes as its teacher. Given
both models' class probabilities on the same labelled examples, this module
measures how often they agree, the 2x2 table of who is right, accuracy by
sentence length and by the teacher's confidence, each model's calibration
(Guo et al. 2017) and the examples on which they disagree most.

Everything is plain numpy: `labels` is an `(n,)` array of gold class ids,
`teacher_probs` / `student_probs` are `(n, C)` arrays whose rows are
probability distributions, `lengths` an `(n,)` array of words per text and
`texts` a list of `n` strings. docs/analysis.md explains every number.

Examples:

```python
from kdplug.analysis import behaviour

report = behaviour.behaviour_report(labels, teacher_probs, student_probs,
                                    texts, lengths=lengths)
report["error_overlap"]["teacher_only"]     # teacher right, student wrong
report["calibration"]["student"]["ece"]
```
"""

import math

import numpy as np

#: Default word-count edges of `length_buckets`: 0-10, 11-15, 16-20, 21-25,
#: 26-30 and 31+ words (buckets `[lo, hi)`).
DEFAULT_LENGTH_EDGES = (0, 11, 16, 21, 26, 31, math.inf)

#: Tolerance on a probability row's sum (float16/float32 softmax outputs).
SUM_TOLERANCE = 1e-3

#: `nll` clips `p[label]` from below at this value, so a confident mistake
#: costs at most `-log(1e-12) ~ 27.6` instead of infinity.
NLL_FLOOR = 1e-12


# --- input checks ------------------------------------------------------------

def _check_probs(name, probs):
    try:
        probs = np.asarray(probs, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric (n, C) array of probabilities; "
                         f"could not convert it to float: {err}") from None
    if probs.ndim != 2 or probs.shape[0] < 1 or probs.shape[1] < 2:
        raise ValueError(
            f"{name} must be an (n, C) array of probabilities with n >= 1 "
            f"examples and C >= 2 classes, got shape {probs.shape}")
    bad = ~np.isfinite(probs).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite, row {i} is {probs[i].tolist()}")
    sums = probs.sum(axis=1)
    off = np.abs(sums - 1.0) > SUM_TOLERANCE
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"{name} rows must sum to 1 (within {SUM_TOLERANCE}): row {i} sums to "
            f"{sums[i]:.6g}; pass probabilities (softmax outputs), not logits")
    outside = (probs < -1e-6).any(axis=1) | (probs > 1 + SUM_TOLERANCE).any(axis=1)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(f"{name} must hold probabilities in [0, 1], row {i} is "
                         f"{probs[i].tolist()}")
    return probs


def _check_pair(teacher_probs, student_probs):
    teacher_probs = _check_probs("teacher_probs", teacher_probs)
    student_probs = _check_probs("student_probs", student_probs)
    if teacher_probs.shape != student_probs.shape:
        raise ValueError(
            f"teacher_probs and student_probs must have the same (n, C) shape, got "
            f"{teacher_probs.shape} and {student_probs.shape}")
    return teacher_probs, student_probs


def _check_labels(labels, n, num_classes, name="labels"):
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"{name} must be an ({n},) array of class ids (one per "
                         f"example), got shape {labels.shape}")
    if labels.dtype.kind == "f":
        if not np.isfinite(labels).all() or (labels != np.round(labels)).any():
            raise ValueError(f"{name} must be integer class ids, got {labels[:5]}...")
        labels = labels.astype(np.int64)
    elif labels.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integer class ids, got dtype {labels.dtype}")
    out = (labels < 0) | (labels >= num_classes)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise ValueError(f"{name} must be class ids in [0, {num_classes}), "
                         f"{name}[{i}] is {labels[i]}")
    return labels.astype(np.int64)


def _check_values(name, values, n=None):
    """A 1-D float array without NaN; of length `n` when given."""
    want = "a 1-D array (one value per example)" if n is None else \
        f"an ({n},) array (one value per example)"
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {want} of numbers") from None
    if values.ndim != 1 or (n is not None and values.shape[0] != n):
        raise ValueError(f"{name} must be {want}, got shape {values.shape}")
    if np.isnan(values).any():
        raise ValueError(f"{name} must not contain NaN")
    return values


def _check_texts(texts, n):
    if texts is None:
        return [None] * n
    if isinstance(texts, str):
        raise ValueError("texts must be a list of n strings, got one string")
    texts = list(texts)
    if len(texts) != n:
        raise ValueError(f"texts must hold one text per example: expected {n}, "
                         f"got {len(texts)}")
    return [None if t is None else str(t) for t in texts]


def _check_models(probs_by_model, n, num_classes=None):
    if not isinstance(probs_by_model, dict) or not probs_by_model:
        raise ValueError("probs_by_model must be a non-empty dict "
                         "{model name: (n, C) probabilities}")
    checked = {}
    for name, probs in probs_by_model.items():
        probs = _check_probs(f"probs_by_model[{name!r}]", probs)
        if num_classes is None:
            num_classes = probs.shape[1]  # every model has the first one's C
        if probs.shape[0] != n or (num_classes is not None
                                   and probs.shape[1] != num_classes):
            want = f"({n}, {num_classes})" if num_classes else f"({n}, C)"
            raise ValueError(f"probs_by_model[{name!r}] must have shape {want}, "
                             f"got {probs.shape}")
        checked[name] = probs
    return checked


def _fraction(count, total):
    return float(count) / total if total else math.nan


# --- agreement and the 2x2 table -----------------------------------------------

def agreement(teacher_probs, student_probs):
    """Fraction of examples on which teacher and student predict the same
    class: `mean_i [argmax p_t(i) == argmax p_s(i)]`. Gold labels play no
    part (two models can agree on a wrong answer).

    Args:
        teacher_probs: `(n, C)` teacher probabilities.
        student_probs: `(n, C)` student probabilities.

    Returns:
        A float in `[0, 1]`.

    Examples:

    ```python
    agreement([[0.9, 0.1], [0.4, 0.6]], [[0.6, 0.4], [0.7, 0.3]])  # 0.5
    ```
    """
    teacher_probs, student_probs = _check_pair(teacher_probs, student_probs)
    return float(np.mean(teacher_probs.argmax(1) == student_probs.argmax(1)))


def error_overlap(labels, teacher_probs, student_probs):
    """The 2x2 table of who is right, and how much the mistakes overlap.

    With `t_i = [argmax p_t(i) == y_i]` and `s_i` likewise for the student:
    `both_right = #(t & s)`, `teacher_only = #(t & !s)` (teacher right,
    student wrong), `student_only = #(!t & s)`, `both_wrong = #(!t & !s)`.
    `student_errors_teacher_also_makes = both_wrong / (teacher_only +
    both_wrong)` is the share of the student's errors that the teacher makes
    too (NaN if the student makes none); `both_wrong_same_prediction` is the
    share of `both_wrong` examples where both predict the same wrong class
    (NaN if there are none; always 1 with two classes).

    Args:
        labels: `(n,)` gold class ids.
        teacher_probs: `(n, C)` teacher probabilities.
        student_probs: `(n, C)` student probabilities.

    Returns:
        A dict with the four counts (ints), `n`, `teacher_accuracy`,
        `student_accuracy`, `agreement` and the two fractions above.

    Examples:

    ```python
    table = error_overlap([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]],
                          [[0.3, 0.7], [0.1, 0.9], [0.8, 0.2]])
    # both_right 1, teacher_only 1, student_only 0, both_wrong 1
    ```
    """
    teacher_probs, student_probs = _check_pair(teacher_probs, student_probs)
    n, num_classes = teacher_probs.shape
    labels = _check_labels(labels, n, num_classes)
    t_pred, s_pred = teacher_probs.argmax(1), student_probs.argmax(1)
    t_ok, s_ok = t_pred == labels, s_pred == labels
    both_wrong = ~t_ok & ~s_ok
    counts = {
        "both_right": int(np.sum(t_ok & s_ok)),
        "teacher_only": int(np.sum(t_ok & ~s_ok)),
        "student_only": int(np.sum(~t_ok & s_ok)),
        "both_wrong": int(np.sum(both_wrong)),
    }
    return {
        **counts,
        "n": int(n),
        "teacher_accuracy": float(np.mean(t_ok)),
        "student_accuracy": float(np.mean(s_ok)),
        "agreement": float(np.mean(t_pred == s_pred)),
        "student_errors_teacher_also_makes": _fraction(
            counts["both_wrong"], counts["both_wrong"] + counts["teacher_only"]),
        "both_wrong_same_prediction": _fraction(
            np.sum(both_wrong & (t_pred == s_pred)), counts["both_wrong"]),
    }


# --- accuracy by bucket --------------------------------------------------------

def _integral(x):
    return math.isinf(x) or float(x).is_integer()


def _bucket_name(lo, hi, as_ints, closed):
    show = (lambda x: f"{int(x)}") if as_ints else (lambda x: f"{x:.2f}")
    if math.isinf(lo):
        return f"<{show(hi)}" if not closed else f"<={show(hi)}"
    if math.isinf(hi):
        return f"{show(lo)}+"
    if as_ints:
        last = int(hi) if closed else int(hi) - 1
        return show(lo) if last == int(lo) else f"{show(lo)}-{last}"
    return f"{show(lo)}-{show(hi)}"


def accuracy_by_bucket(values, correct_by_model, edges, include_last_edge=False):
    """Accuracy of each model within buckets of a per-example value (text
    length, the teacher's confidence, ...).

    The buckets are `[edges[k], edges[k+1])`, closed on the left and open on
    the right; with `include_last_edge=True` the last one is closed on both
    sides, so a value equal to `edges[-1]` counts in it (a confidence of 1.0).
    Values outside `[edges[0], edges[-1])` are in no bucket. Each model's
    accuracy in a bucket is `mean(correct[i] for i in bucket)`, `None` for an
    empty bucket. A bucket is named `"10-19"` when every finite edge and
    every value is a whole number (`"31+"` for an open end), `"0.50-0.60"`
    otherwise.

    Args:
        values: `(n,)` numbers, one per example.
        correct_by_model: `{model name: (n,) bool array}` (whether the model's
            prediction is right), e.g. `{"teacher": ..., "student": ...}`.
        edges: increasing bucket edges, at least two; the last may be
            `math.inf`.
        include_last_edge: whether the last bucket includes `edges[-1]`.

    Returns:
        A list with one dict per bucket, in order: `{"bucket", "lo", "hi",
        "n", <model name>: accuracy or None, ...}` (`hi` may be `inf`).

    Examples:

    ```python
    accuracy_by_bucket([3, 12, 25], {"student": [True, False, True]},
                       [0, 10, 20, math.inf])
    # [{"bucket": "0-9", "lo": 0, "hi": 10, "n": 1, "student": 1.0},
    #  {"bucket": "10-19", ..., "n": 1, "student": 0.0},
    #  {"bucket": "20+", ..., "n": 1, "student": 1.0}]
    ```
    """
    try:
        edges = [float(e) for e in edges]
    except (TypeError, ValueError):
        raise ValueError(f"edges must be a sequence of numbers, got {edges!r}") \
            from None
    if len(edges) < 2 or any(math.isnan(e) for e in edges) or any(
            b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges must be at least two strictly increasing numbers, "
                         f"got {edges}")
    if not isinstance(correct_by_model, dict) or not correct_by_model:
        raise ValueError("correct_by_model must be a non-empty dict "
                         "{model name: (n,) bool array}")
    clash = sorted({"bucket", "lo", "hi", "n"} & set(correct_by_model))
    if clash:
        raise ValueError(f"correct_by_model's model names must not be 'bucket', "
                         f"'lo', 'hi' or 'n' (the bucket's own keys), got {clash}")
    values = _check_values("values", values)
    n = values.shape[0]
    correct = {}
    for name, ok in correct_by_model.items():
        ok = np.asarray(ok)
        if ok.shape != (n,):
            raise ValueError(f"correct_by_model[{name!r}] must have shape ({n},) like "
                             f"values, got {ok.shape}")
        correct[name] = ok.astype(bool)
    as_ints = all(_integral(e) for e in edges) and bool(
        np.all(values == np.round(values)))
    rows = []
    for k, (lo, hi) in enumerate(zip(edges, edges[1:])):
        closed = include_last_edge and k == len(edges) - 2
        inside = (values >= lo) & ((values <= hi) if closed else (values < hi))
        count = int(inside.sum())
        row = {"bucket": _bucket_name(lo, hi, as_ints, closed),
               "lo": int(lo) if as_ints and not math.isinf(lo) else lo,
               "hi": int(hi) if as_ints and not math.isinf(hi) else hi,
               "n": count}
        for name, ok in correct.items():
            row[name] = float(ok[inside].mean()) if count else None
        rows.append(row)
    return rows


def _correct(labels, probs_by_model):
    return {name: probs.argmax(1) == labels for name, probs in probs_by_model.items()}


def length_buckets(lengths, labels, probs_by_model, edges=None):
    """Accuracy of each model by text length (words per text).

    Args:
        lengths: `(n,)` words per text.
        labels: `(n,)` gold class ids.
        probs_by_model: `{model name: (n, C) probabilities}`.
        edges: bucket edges for `accuracy_by_bucket` (buckets `[lo, hi)`).
            Default `DEFAULT_LENGTH_EDGES`: 0-10, 11-15, 16-20, 21-25, 26-30
            and 31+ words, fixed so that runs on different data compare.

    Returns:
        `accuracy_by_bucket`'s list, one dict per bucket.

    Examples:

    ```python
    length_buckets([4, 18, 40], [0, 1, 1],
                   {"teacher": t_probs, "student": s_probs})
    # buckets "0-10" (n 1), "11-15" (n 0, accuracies None), "16-20" (n 1), ...
    ```
    """
    lengths = _check_values("lengths", lengths)
    n = lengths.shape[0]
    probs_by_model = _check_models(probs_by_model, n)
    num_classes = next(iter(probs_by_model.values())).shape[1]
    labels = _check_labels(labels, n, num_classes)
    return accuracy_by_bucket(lengths, _correct(labels, probs_by_model),
                              DEFAULT_LENGTH_EDGES if edges is None else edges)


def default_confidence_edges(num_classes):
    """The default buckets of `confidence_buckets`: from `1/C` (the lowest
    possible max probability) to 1.0, at every multiple of 0.1 above `1/C`.
    Two classes: `(0.5, 0.6, 0.7, 0.8, 0.9, 1.0)`; three: `(1/3, 0.4, 0.5,
    ..., 1.0)`.

    Args:
        num_classes: `C` (>= 2).

    Returns:
        A tuple of floats.

    Examples:

    ```python
    default_confidence_edges(2)  # (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    ```
    """
    low = 1.0 / num_classes
    return (low, *(k / 10 for k in range(1, 11) if k / 10 > low + 1e-9))


def confidence_buckets(labels, teacher_probs, probs_by_model, edges=None):
    """Accuracy of each model by the **teacher's** confidence, `max_c p_t(c)`:
    are the student's extra mistakes on examples the teacher finds hard too?

    Buckets are `[lo, hi)` and the last includes 1.0. The default edges,
    `default_confidence_edges(C)`, start at `1/C`, the lowest possible max
    probability, so no example falls outside: `(0.5, 0.6, 0.7, 0.8, 0.9,
    1.0)` for two classes.

    Args:
        labels: `(n,)` gold class ids.
        teacher_probs: `(n, C)` teacher probabilities (the bucketing value).
        probs_by_model: `{model name: (n, C) probabilities}` to score, usually
            `{"teacher": teacher_probs, "student": student_probs}`.
        edges: increasing edges within `[0, 1]`, or None for the default.

    Returns:
        `accuracy_by_bucket`'s list, one dict per bucket.

    Examples:

    ```python
    confidence_buckets(labels, t_probs, {"teacher": t_probs, "student": s_probs})
    # [{"bucket": "0.50-0.60", "lo": 0.5, "hi": 0.6, "n": 12,
    #   "teacher": 0.58, "student": 0.5}, ...]
    ```
    """
    teacher_probs = _check_probs("teacher_probs", teacher_probs)
    n, num_classes = teacher_probs.shape
    probs_by_model = _check_models(probs_by_model, n, num_classes)
    labels = _check_labels(labels, n, num_classes)
    confidence = np.clip(teacher_probs.max(1), 0.0, 1.0)
    if edges is None:
        edges = default_confidence_edges(num_classes)
    return accuracy_by_bucket(confidence, _correct(labels, probs_by_model), edges,
                              include_last_edge=True)


# --- calibration ---------------------------------------------------------------

def calibration(labels, probs, num_bins=10):
    """Calibration of one model: ECE, MCE, reliability bins, Brier score, NLL.

    Guo, Pleiss, Sun & Weinberger (2017), *On Calibration of Modern Neural
    Networks* (ICML). A model is calibrated when, among the examples it
    predicts with confidence `conf = max_c p(c)`, a fraction `conf` is right.
    Confidences are put in `B = num_bins` equal-width bins `(k/B, (k+1)/B]`,
    closed on the right as in the paper (the first bin, `[0, 1/B]`, also
    includes 0): a confidence of exactly 0.5 with `B = 10` is in bin
    `(0.4, 0.5]`, and 1.0 in `(0.9, 1.0]`. With `acc_b` and `conf_b` the
    accuracy and mean confidence of bin `b` and `n_b` its size:

    - `ece = sum_b (n_b / n) * |acc_b - conf_b|` (expected calibration error)
    - `mce = max_b |acc_b - conf_b|` over non-empty bins (maximum c. e.)
    - `brier = mean_i sum_c (p_i(c) - [c == y_i])^2` (0 best, 2 worst)
    - `nll = mean_i -log max(p_i(y_i), 1e-12)`

    Args:
        labels: `(n,)` gold class ids.
        probs: `(n, C)` predicted probabilities.
        num_bins: `B`, the number of equal-width confidence bins (>= 1).

    Returns:
        `{"ece", "mce", "brier", "nll", "accuracy", "mean_confidence", "n",
        "num_bins", "bins"}`; `bins` lists every bin in order as `{"lo", "hi",
        "n", "accuracy", "confidence"}`, with `accuracy` and `confidence` None
        for an empty bin (`n` 0).

    Examples:

    ```python
    cal = calibration([0, 1, 1], [[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]], num_bins=5)
    cal["ece"], cal["bins"][4]  # the (0.8, 1.0] bin: n 1, accuracy 1.0
    ```
    """
    probs = _check_probs("probs", probs)
    n, num_classes = probs.shape
    labels = _check_labels(labels, n, num_classes)
    if isinstance(num_bins, bool) or not isinstance(num_bins, (int, np.integer)) \
            or num_bins < 1:
        raise ValueError(f"num_bins must be an integer >= 1, got {num_bins!r}")
    num_bins = int(num_bins)
    confidence = np.clip(probs.max(1), 0.0, 1.0)
    correct = probs.argmax(1) == labels
    # exactly k/B, as a literal like 0.3 is: a confidence equal to an edge
    # goes to the bin on its left
    edges = np.arange(num_bins + 1) / num_bins
    which = np.clip(np.searchsorted(edges, confidence, side="left") - 1,
                    0, num_bins - 1)
    bins, ece, mce = [], 0.0, None
    for b in range(num_bins):
        inside = which == b
        count = int(inside.sum())
        entry = {"lo": float(edges[b]), "hi": float(edges[b + 1]), "n": count,
                 "accuracy": None, "confidence": None}
        if count:
            acc, conf = float(correct[inside].mean()), float(confidence[inside].mean())
            entry.update(accuracy=acc, confidence=conf)
            gap = abs(acc - conf)
            ece += count / n * gap
            mce = gap if mce is None else max(mce, gap)
        bins.append(entry)
    onehot = np.eye(num_classes)[labels]
    return {
        "ece": float(ece),
        "mce": float(mce),
        "brier": float(np.mean(np.sum((probs - onehot) ** 2, axis=1))),
        "nll": float(np.mean(-np.log(np.maximum(probs[np.arange(n), labels],
                                                NLL_FLOOR)))),
        "accuracy": float(correct.mean()),
        "mean_confidence": float(confidence.mean()),
        "n": int(n),
        "num_bins": num_bins,
        "bins": bins,
    }


# --- the examples they disagree on most ---------------------------------------

def top_disagreements(labels, teacher_probs, student_probs, texts, n=10):
    """The `n` examples on which teacher and student disagree most, by the
    total variation distance between their distributions,
    `d_i = 0.5 * sum_c |p_t(c) - p_s(c)|` (0: identical, 1: disjoint
    supports); largest first, ties broken by the lower index.

    Args:
        labels: `(n,)` gold class ids.
        teacher_probs: `(n, C)` teacher probabilities.
        student_probs: `(n, C)` student probabilities.
        texts: the `n` texts (or None: every `"text"` is None).
        n: how many examples to return (fewer if there are fewer).

    Returns:
        A list of `{"index", "text", "label", "teacher_probs", "student_probs",
        "teacher_prediction", "student_prediction", "distance"}` dicts.

    Examples:

    ```python
    top_disagreements(labels, t_probs, s_probs, texts, n=5)[0]
    # {"index": 17, "text": "not bad at all", "label": 1,
    #  "teacher_probs": [0.1, 0.9], "student_probs": [0.8, 0.2],
    #  "teacher_prediction": 1, "student_prediction": 0, "distance": 0.7}
    ```
    """
    teacher_probs, student_probs = _check_pair(teacher_probs, student_probs)
    count, num_classes = teacher_probs.shape
    labels = _check_labels(labels, count, num_classes)
    texts = _check_texts(texts, count)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    distance = 0.5 * np.abs(teacher_probs - student_probs).sum(1)
    order = np.argsort(-distance, kind="stable")[:int(n)]
    return [{
        "index": int(i),
        "text": texts[i],
        "label": int(labels[i]),
        "teacher_probs": teacher_probs[i].tolist(),
        "student_probs": student_probs[i].tolist(),
        "teacher_prediction": int(teacher_probs[i].argmax()),
        "student_prediction": int(student_probs[i].argmax()),
        "distance": float(distance[i]),
    } for i in order]


# --- everything at once --------------------------------------------------------

def _jsonable(value):
    """Python floats/ints/lists; NaN and +-inf -> None."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def behaviour_report(labels, teacher_probs, student_probs, texts, lengths=None,
                     num_bins=10, top_n=10):
    """Everything in this module for one teacher and one student, as a
    JSON-able dict (Python numbers; NaN and infinity written as None, so an
    open-ended bucket's `hi` is None).

    Args:
        labels: `(n,)` gold class ids.
        teacher_probs: `(n, C)` teacher probabilities.
        student_probs: `(n, C)` student probabilities.
        texts: the `n` texts (or None).
        lengths: `(n,)` words per text, or None to leave out `by_length`.
        num_bins: calibration bins.
        top_n: how many `top_disagreements`.

    Returns:
        `{"n", "num_classes", "agreement", "error_overlap", "by_length"
        (None without lengths), "by_teacher_confidence", "calibration":
        {"teacher": ..., "student": ...}, "top_disagreements"}`.

    Examples:

    ```python
    import json
    report = behaviour_report(labels, t_probs, s_probs, texts, lengths=lengths)
    json.dumps(report, allow_nan=False)
    ```
    """
    teacher_probs, student_probs = _check_pair(teacher_probs, student_probs)
    n, num_classes = teacher_probs.shape
    labels = _check_labels(labels, n, num_classes)
    texts = _check_texts(texts, n)
    both = {"teacher": teacher_probs, "student": student_probs}
    return _jsonable({
        "n": n,
        "num_classes": num_classes,
        "agreement": agreement(teacher_probs, student_probs),
        "error_overlap": error_overlap(labels, teacher_probs, student_probs),
        "by_length": None if lengths is None else length_buckets(
            lengths, labels, both),
        "by_teacher_confidence": confidence_buckets(labels, teacher_probs, both),
        "calibration": {name: calibration(labels, probs, num_bins)
                        for name, probs in both.items()},
        "top_disagreements": top_disagreements(labels, teacher_probs, student_probs,
                                               texts, top_n),
    })
