"""SQuAD v1.1 / v2.0 scores: the official answer normalisation, exact match,
token F1 and the v2.0 no-answer threshold (as the official v2 evaluation
script computes them). Pure Python, no TensorFlow."""

import collections
import re
import string

__all__ = [
    "best_no_answer_threshold", "exact_match", "f1_score", "normalize_answer",
    "squad_scores",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """The official SQuAD normalisation: lowercase, drop punctuation, drop
    the articles a/an/the, collapse whitespace.

    Args:
        text: an answer string.

    Returns:
        The normalised string.

    Examples:
        >>> normalize_answer("The  Eiffel-Tower!")
        'eiffeltower'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _tokens(text):
    return normalize_answer(text).split() if text else []


def _exact(gold, prediction):
    return float(normalize_answer(gold) == normalize_answer(prediction))


def _f1(gold, prediction):
    gold_tokens, pred_tokens = _tokens(gold), _tokens(prediction)
    if not gold_tokens or not pred_tokens:
        # official: an empty side scores 1 only when both are empty
        return float(gold_tokens == pred_tokens)
    common = collections.Counter(gold_tokens) & collections.Counter(pred_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _golds(answers):
    # official v2: gold answers that normalise to "" are dropped; an
    # unanswerable question has the single gold answer ""
    golds = [a for a in answers if normalize_answer(a)]
    return golds or [""]


def exact_match(prediction, answers):
    """Exact match of one prediction, the maximum over the gold answers.

    Args:
        prediction: the predicted answer text ("" for no answer).
        answers: the gold answer texts; empty for an unanswerable question.

    Returns:
        1.0 or 0.0.

    Examples:
        >>> exact_match("the Eiffel Tower", ["Eiffel Tower", "tower"])
        1.0
        >>> exact_match("", [])
        1.0
    """
    return max(_exact(gold, prediction) for gold in _golds(answers))


def f1_score(prediction, answers):
    """Token F1 of one prediction, the maximum over the gold answers.

    Args:
        prediction: the predicted answer text ("" for no answer).
        answers: the gold answer texts; empty for an unanswerable question.

    Returns:
        The F1 in [0, 1].

    Examples:
        >>> round(f1_score("big red tower", ["red tower"]), 4)
        0.8
    """
    return max(_f1(gold, prediction) for gold in _golds(answers))


def _raw_scores(predictions, gold):
    exact, f1 = {}, {}
    for qid, answers in gold.items():
        prediction = predictions.get(qid, "")
        exact[qid] = exact_match(prediction, answers)
        f1[qid] = f1_score(prediction, answers)
    return exact, f1


def _mean(scores, ids):
    return 100.0 * sum(scores[i] for i in ids) / len(ids) if ids else 0.0


def squad_scores(predictions, gold, null_differences=None, threshold=0.0):
    """Aggregate SQuAD scores in percent.

    Args:
        predictions: {id: predicted text}; a missing id counts as "".
        gold: {id: list of gold answer texts}; an empty list marks an
            unanswerable (v2.0) question.
        null_differences: optional {id: null score minus best span score};
            when given, a prediction whose difference is above `threshold`
            becomes "" and the best threshold is reported too
            (`best_no_answer_threshold`).
        threshold: the no-answer threshold applied with `null_differences`
            (0.0, run_squad's `null_score_diff_threshold` default).

    Returns:
        A dict with `exact`, `f1`, `total`; with unanswerable or answerable
        subsets also `HasAns_exact`, `HasAns_f1`, `HasAns_total`,
        `NoAns_exact`, `NoAns_f1`, `NoAns_total`; with `null_differences`
        also `best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`.

    Examples:
        >>> squad_scores({"q1": "Paris", "q2": ""},
        ...              {"q1": ["Paris"], "q2": []})["exact"]
        100.0
    """
    if not gold:
        raise ValueError("squad_scores: no gold answers")
    raw_exact, raw_f1 = _raw_scores(predictions, gold)
    if null_differences is None:
        exact, f1 = raw_exact, raw_f1
    else:
        thresholded = {
            qid: ("" if null_differences.get(qid, 0.0) > threshold
                  else predictions.get(qid, "")) for qid in gold}
        exact, f1 = _raw_scores(thresholded, gold)
    ids = list(gold)
    out = {"exact": _mean(exact, ids), "f1": _mean(f1, ids), "total": len(ids)}
    has = [i for i in ids if gold[i]]
    no = [i for i in ids if not gold[i]]
    for name, subset in (("HasAns", has), ("NoAns", no)):
        if subset:
            out[f"{name}_exact"] = _mean(exact, subset)
            out[f"{name}_f1"] = _mean(f1, subset)
            out[f"{name}_total"] = len(subset)
    if null_differences is not None:
        best_exact, exact_thresh = best_no_answer_threshold(
            predictions, raw_exact, null_differences, gold)
        best_f1, f1_thresh = best_no_answer_threshold(
            predictions, raw_f1, null_differences, gold)
        out.update(best_exact=best_exact, best_exact_thresh=exact_thresh,
                   best_f1=best_f1, best_f1_thresh=f1_thresh)
    return out


def best_no_answer_threshold(predictions, scores, null_differences, gold):
    """The no-answer threshold that maximises a score on this set, as the
    official v2 script's `find_best_thresh`: questions sorted by their null
    difference; answering each in turn adds its score (answerable) or loses
    1 (unanswerable with a non-empty prediction).

    Args:
        predictions: {id: predicted text} before any threshold.
        scores: {id: per-question score in [0, 1]} (exact or F1) of those
            predictions.
        null_differences: {id: null score minus best span score}.
        gold: {id: gold answer texts}, empty for unanswerable.

    Returns:
        (best score in percent, best threshold).

    Examples:
        >>> best_no_answer_threshold({"a": "x", "b": "y"}, {"a": 1.0, "b": 0.0},
        ...                          {"a": -2.0, "b": 3.0}, {"a": ["x"], "b": []})
        (100.0, -2.0)
    """
    current = best = sum(1 for qid in scores if not gold[qid])
    best_threshold = 0.0
    for qid in sorted(null_differences, key=null_differences.get):
        if qid not in scores:
            continue
        if gold[qid]:
            current += scores[qid]
        elif predictions.get(qid, ""):
            current -= 1
        if current > best:
            best = current
            best_threshold = null_differences[qid]
    return 100.0 * best / len(scores), best_threshold
