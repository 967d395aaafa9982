"""Is a model stuck at one answer? The checks behind the collapse warning."""

import math

import numpy as np

from kdplug.evaluation.span_decoding import within_windows

# A classifier has collapsed when one class takes at least this share of its
# predictions while the split's largest class holds at most `MAX_LABEL_SHARE`.
MIN_PREDICTION_SHARE = 0.95
MAX_LABEL_SHARE = 0.85
# A regressor has collapsed when its predictions spread less than this
# fraction of the labels' standard deviation.
MIN_SPREAD = 0.05
# A multi-label tagger has collapsed when it predicts fewer positives than
# this fraction of the gold positives (all-negative, in practice).
MIN_POSITIVE_RATIO = 0.05
# A hard cross-entropy within this fraction of ln C over a whole epoch has
# learnt nothing beyond the uniform guess.
PLATEAU_TOLERANCE = 0.05
# Fewer examples than this say nothing.
MIN_EXAMPLES = 20

# A hard cross-entropy below this fraction of ln C has left the uniform
# guess (`escape_step`).
ESCAPE_LEVEL = 0.9

ADVICE = (
    "likely causes: a head reading [CLS] of a checkpoint trained with mean "
    "pooling, a learning rate too low (or too high) for the student, a "
    "head that starts from scratch or from weights trained for another "
    "pooling, loss terms on intermediate layers that outweigh the prediction "
    "terms early on, or too few steps; try teacher.pooling: auto (the "
    "checkpoint's own pooling) or mean, student.init: teacher, "
    "training.learning_rate between 5e-5 and 3e-4, training.warmup_ratio 0.1, "
    "a lower weight for the intermediate-layer terms, or more "
    "epochs (docs/results.md, 'Escaping the majority class')")


def collapse_check(label_kind, outputs, labels):
    """Whether a model's predictions on a split have collapsed to one answer.

    Args:
        label_kind: the task's `label_kind`: `"class"` (logits `(n, C)`,
            class ids), `"tags"` (logits `(n, T, C)`, ids, `< 0` ignored),
            `"float"` (values), `"multi"` (logits `(n, L)`, 0/1 labels)
            or `"span"` (start and end logits `(n, T, 2)`, window labels
            `(n, 4)` whose first column is the gold start token and last
            the window's length, past which no start is counted: collapsed
            when one start position wins for nearly every window while the
            gold starts are spread out, e.g. "no answer" everywhere).
        outputs: the model's outputs on the split (numpy).
        labels: the gold labels (numpy).

    Returns:
        A JSON-able dict: `collapsed` (bool), `checked` (False when the
        split is too small or has no labels), and the numbers behind it:
        `prediction_share` / `label_share` (the largest predicted and gold
        class's shares), `spread` (regression), `positive_ratio`
        (multi-label), and `text`, one line that says it.

    Examples:

    >>> logits = np.tile([[2.0, -1.0]], (30, 1))
    >>> collapse_check("class", logits, np.arange(30) % 2)["collapsed"]
    True
    """
    outputs, labels = np.asarray(outputs), np.asarray(labels)
    if label_kind == "span":  # the start position plays the class
        outputs, labels = within_windows(outputs, labels)[..., 0], labels[:, 0]
    if label_kind in ("class", "tags", "span"):
        keep = labels.reshape(-1) >= 0
        predicted = outputs.reshape(-1, outputs.shape[-1]).argmax(-1)[keep]
        gold = labels.reshape(-1)[keep]
        if len(gold) < MIN_EXAMPLES:
            return _unchecked(len(gold))
        counts = np.bincount(predicted)
        top, pred_share = int(counts.argmax()), counts.max() / len(predicted)
        label_share = np.bincount(gold).max() / len(gold)
        collapsed = pred_share >= MIN_PREDICTION_SHARE and label_share <= MAX_LABEL_SHARE
        what = "starts answers at token" if label_kind == "span" else "predicts class"
        return {"checked": True, "collapsed": bool(collapsed),
                "prediction_share": float(pred_share), "label_share": float(label_share),
                "text": f"{what} {top} for {pred_share:.1%} of the examples "
                        f"(the largest gold class: {label_share:.1%})"}
    if label_kind == "float":
        outputs, labels = outputs.reshape(-1), labels.reshape(-1)
        if len(labels) < MIN_EXAMPLES or not np.std(labels) > 0:
            return _unchecked(len(labels))
        spread = float(np.std(outputs) / np.std(labels))
        return {"checked": True, "collapsed": spread < MIN_SPREAD, "spread": spread,
                "text": f"its predictions spread {spread:.3f}x as much as the labels "
                        f"(std {np.std(outputs):.4g} vs {np.std(labels):.4g})"}
    if label_kind == "multi":
        gold = int((labels > 0).sum())
        if len(labels) < MIN_EXAMPLES or gold == 0:
            return _unchecked(len(labels))
        ratio = float((outputs > 0).sum() / gold)
        return {"checked": True, "collapsed": ratio < MIN_POSITIVE_RATIO,
                "positive_ratio": ratio,
                "text": f"it predicts {ratio:.1%} as many labels as the gold data holds"}
    raise ValueError(f"collapse_check: unknown label kind {label_kind!r}")


def plateau_check(hard_loss, num_classes):
    """Whether an epoch's mean hard cross-entropy stayed at the uniform
    guess, `ln C` (within `PLATEAU_TOLERANCE`): a student that has not
    learnt to tell the classes apart.

    Examples:

    >>> plateau_check(0.69, 2), plateau_check(0.45, 2)
    (True, False)
    """
    if hard_loss is None or not math.isfinite(hard_loss) or num_classes < 2:
        return False
    uniform = math.log(num_classes)
    return abs(hard_loss - uniform) <= PLATEAU_TOLERANCE * uniform


def escape_step(steps, hard_losses, num_classes, window=1):
    """The first logged optimizer step whose hard cross-entropy is below
    `ESCAPE_LEVEL * ln C`: how long a student sat at the uniform guess.

    Args:
        steps: the logged steps, ascending (e.g. a stage's
            `report["step_history"][stage]["step"]`).
        hard_losses: the hard cross-entropy logged at each of them (a mean
            over the `window` steps up to it; None where not logged).
        num_classes: int. C.
        window: int. Steps each logged value covers (`--log-every`): the
            step returned is the last of the first window below the level,
            counted from the first step of `steps` (1-based).

    Returns:
        int, or None when the loss never gets below the level.

    Examples:

    >>> escape_step([5, 10, 15, 20], [0.69, 0.69, 0.61, 0.40], 2, window=5)
    15
    """
    level = ESCAPE_LEVEL * math.log(num_classes)
    first = steps[0] if steps else 0
    for step, value in zip(steps, hard_losses):
        if value is not None and math.isfinite(value) and value < level:
            return step - first + window
    return None


def _unchecked(n):
    return {"checked": False, "collapsed": False,
            "text": f"not checked ({n} labelled examples)"}
