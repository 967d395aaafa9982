"""Best answer span of one question over all its context windows (as BERT's
run_squad.py decodes): the top start and end candidates of each window, end
at or after start, at most `max_answer_length` tokens, both in the context
part; scored by start logit + end logit. Pure numpy, no TensorFlow."""

import dataclasses

import numpy as np

__all__ = ["SpanAnswer", "best_span", "within_windows"]

# A window's label is (start, end, window id, length): the length's column
# (`kdplug.terms.span_positions.LENGTH`, which needs Keras).
LENGTH = 3


@dataclasses.dataclass(frozen=True)
class SpanAnswer:
    """The decoded answer of one question.

    Args:
        text: the answer text, a slice of the context ("" when no span fits).
        char_start: its first character in the context (-1 when none).
        score: start + end logit of the best span (-inf when none).
        null_score: the smallest start[0] + end[0] over the windows (the
            "no answer" score of SQuAD v2.0; `null_score - score` is the
            null difference the no-answer threshold compares).
        window: the window the span came from (-1 when none).

    Examples:
        >>> SpanAnswer("Paris", 10, 7.5, 1.0, 0).text
        'Paris'
    """

    text: str
    char_start: int
    score: float
    null_score: float
    window: int


def best_span(context, start_logits, end_logits, offsets, n_best=20,
              max_answer_length=30):
    """Decode the best span of one question.

    Args:
        context: the context text.
        start_logits: per window, the start logits, shape (sequence_length,).
        end_logits: per window, the end logits, same shape.
        offsets: per window, per token a (char_start, char_end) pair into the
            context, or (-1, -1) for tokens outside the context part
            ([CLS], question, [SEP], padding).
        n_best: start and end candidates kept per window (the top logits).
        max_answer_length: the longest answer in tokens.

    Returns:
        A `SpanAnswer`.

    Examples:
        >>> ctx = "in Paris now"
        >>> offs = [(-1, -1), (0, 2), (3, 8), (9, 12), (-1, -1)]
        >>> best_span(ctx, [[0, 0, 5, 0, 0]], [[0, 0, 4, 1, 0]], [offs]).text
        'Paris'
    """
    if not (len(start_logits) == len(end_logits) == len(offsets)) or not offsets:
        raise ValueError(
            "best_span: start_logits, end_logits and offsets need one entry "
            "per window and at least one window")
    best = (-np.inf, -1, -1, -1)  # score, window, start token, end token
    null_score = np.inf
    for window, (starts, ends, spans) in enumerate(
            zip(start_logits, end_logits, offsets)):
        starts = np.asarray(starts, dtype=np.float64)
        ends = np.asarray(ends, dtype=np.float64)
        spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        null_score = min(null_score, float(starts[0] + ends[0]))
        in_context = spans[:, 0] >= 0
        top_starts = [i for i in np.argsort(-starts, kind="stable")[:n_best]
                      if i < len(spans) and in_context[i]]
        top_ends = [i for i in np.argsort(-ends, kind="stable")[:n_best]
                    if i < len(spans) and in_context[i]]
        for s in top_starts:
            for e in top_ends:
                if e < s or e - s + 1 > max_answer_length:
                    continue
                score = float(starts[s] + ends[e])
                if score > best[0]:
                    best = (score, window, int(s), int(e))
    score, window, s, e = best
    if window < 0:
        return SpanAnswer("", -1, float("-inf"), null_score, -1)
    spans = np.asarray(offsets[window], dtype=np.int64).reshape(-1, 2)
    char_start, char_end = int(spans[s][0]), int(spans[e][1])
    return SpanAnswer(context[char_start:char_end], char_start, score,
                      null_score, window)


def within_windows(logits, labels):
    """Per-token logits of windows with every position at or past a
    window's length (its padding) set to -inf, so that what is decoded
    from them (`best_span`'s top candidates, an argmax) never depends on
    what a model gives a padding token: the same whether the windows were
    read padded to `data.sequence_length` or cut to their batch's longest
    one (`kdplug.data.length_buckets.read_by_length`), as the span terms
    mask them (`kdplug.terms.span_positions.span_logits`).

    Args:
        logits: `(n, seq, ...)` array (start and end logits: `(n, seq, 2)`).
        labels: `(n, 4)` window labels: start, end, window id, length.

    Returns:
        A float array of `logits`' shape.

    Examples:
        >>> within_windows(np.ones((1, 3, 2)), np.array([[1, 1, 0, 2]]))[0, :, 0].tolist()
        [1.0, 1.0, -inf]
    """
    logits = np.asarray(logits)
    lengths = np.asarray(labels)[:, LENGTH]
    real = np.arange(logits.shape[1])[None, :] < lengths[:, None]
    real = real.reshape(real.shape + (1,) * (logits.ndim - 2))
    return np.where(real, logits, -np.inf)
