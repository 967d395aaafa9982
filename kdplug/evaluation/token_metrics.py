"""Token-classification metrics: word-level accuracy and entity-level F1
(BIO tags, with `seqeval`), from per-token logits and word-piece labels.

`seqeval` is an optional dependency (`pip install "kdplug[tokens]"`),
imported only when `entity_f1` is asked for.

Examples:

```python
token_metrics(["token_accuracy", "entity_f1"], logits, labels,
              label_names=["O", "B-PERSON", "I-PERSON"])
# {"token_accuracy": 0.97, "entity_f1": 0.81}
```
"""

import numpy as np

from kdplug.errors import KdplugError

TOKEN_METRICS = ("token_accuracy", "entity_f1")
INSTALL_HINT = 'pip install "kdplug[tokens]"'


def word_sequences(outputs, labels):
    """The gold and predicted class ids of each example's words.

    A word is a position with a label `>= 0` (the first word piece of a
    word, `kdplug.data.token_alignment`); the prediction there is the
    argmax of its logits.

    Args:
        outputs: `(n, seq, C)` logits or probabilities.
        labels: `(n, seq)` class ids, `-1` where no word starts.

    Returns:
        `(gold, predicted)`: two lists of `n` int arrays, in word order.

    >>> gold, pred = word_sequences(np.eye(3)[[[0, 2, 1]]], np.array([[-1, 2, 0]]))
    >>> gold[0].tolist(), pred[0].tolist()
    ([2, 0], [2, 1])
    """
    outputs = np.asarray(outputs)
    labels = np.asarray(labels).astype("int64")
    if outputs.ndim != 3 or labels.shape != outputs.shape[:2]:
        raise ValueError(
            f"token metrics need outputs (n, seq, C) and labels (n, seq), got "
            f"{outputs.shape} and {labels.shape}")
    predicted = np.argmax(outputs, axis=-1)
    keep = labels >= 0
    return ([row[k] for row, k in zip(labels, keep)],
            [row[k] for row, k in zip(predicted, keep)])


def entity_f1(gold, predicted, label_names):
    """Entity-level micro F1 of BIO-tagged word sequences (`seqeval`).

    An entity is a maximal `B-X I-X ...` run of one type `X`, read as the
    CoNLL-2000 `conlleval` script reads it (seqeval's default mode: an
    `I-X` after another type or `O` opens a new entity). A predicted
    entity counts only when its type and both boundaries match a gold
    one; F1 is `2 TP / (2 TP + FP + FN)` pooled over every type and
    example, 0.0 when there is no entity on either side.

    Args:
        gold: list of int arrays, the gold class ids of each example's words.
        predicted: list of int arrays of the same lengths.
        label_names: the BIO tag of each class id (`"O"`, `"B-PER"`, ...).

    >>> entity_f1([np.array([1, 2, 0])], [np.array([1, 0, 0])], ["O", "B-X", "I-X"])
    0.0
    """
    try:
        from seqeval.metrics import f1_score
    except ImportError:
        raise KdplugError("entity_f1 needs seqeval: " + INSTALL_HINT) from None
    names = list(label_names)
    return float(f1_score([[names[i] for i in row] for row in gold],
                          [[names[i] for i in row] for row in predicted],
                          average="micro", zero_division=0))


def token_metrics(names, outputs, labels, label_names=None):
    """Token-classification metrics of per-token logits against word labels.

    Only positions with a label `>= 0` are read: in order, they are the
    words of each example (the first word piece of every word; padding,
    [CLS]/[SEP] and continuation pieces carry `-1`). Every metric is 0.0
    when no position has a label.

    - `token_accuracy`: the share of words whose argmax is the gold class,
      over every word of every example.
    - `entity_f1`: entity-level micro F1 of the BIO tags (`entity_f1()`);
      needs `label_names` and `seqeval`.

    Args:
        names: metric names, from `TOKEN_METRICS`.
        outputs: `(n, seq, C)` logits or probabilities.
        labels: `(n, seq)` int class ids, `-1` where no word starts.
        label_names: the tag of each class id (BIO tags for `entity_f1`).

    Returns:
        `{name: float}` in the order of `names`.

    Examples:

    >>> logits = np.eye(3)[[[0, 1, 2, 0], [0, 1, 0, 0]]]
    >>> labels = np.array([[-1, 1, 2, -1], [-1, 1, 2, -1]])
    >>> token_metrics(["token_accuracy", "entity_f1"], logits, labels,
    ...               label_names=["O", "B-PER", "I-PER"])
    {'token_accuracy': 0.75, 'entity_f1': 0.5}
    """
    unknown = [n for n in names if n not in TOKEN_METRICS]
    if unknown:
        raise ValueError(f"unknown token metric(s) {unknown}; known: {TOKEN_METRICS}")
    if "entity_f1" in names and label_names is None:
        raise ValueError("entity_f1 needs label_names (the BIO tag of each class id)")
    gold, predicted = word_sequences(outputs, labels)
    words = sum(len(g) for g in gold)
    if not words:
        return {name: 0.0 for name in names}
    fns = {
        "token_accuracy": lambda: sum(
            int(np.sum(g == p)) for g, p in zip(gold, predicted)) / words,
        "entity_f1": lambda: entity_f1(gold, predicted, label_names),
    }
    return {name: float(fns[name]()) for name in names}
