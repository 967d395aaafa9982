"""Best span decoding by hand on tiny logits."""

import numpy as np

from kdplug.evaluation.span_decoding import best_span

CTX = "in Paris now"
# [CLS] q [SEP] in Paris now [SEP]
OFFS = [(-1, -1), (-1, -1), (-1, -1), (0, 2), (3, 8), (9, 12), (-1, -1)]


def test_best_span_in_context_only():
    start = [9, 8, 0, 1, 5, 0, 0]   # [CLS] and question are higher: skipped
    end = [9, 0, 0, 0, 3, 4, 7]     # [SEP] at 6 is higher: skipped
    got = best_span(CTX, [start], [end], [OFFS])
    # Paris..now: 5 + 4 = 9 beats Paris..Paris 5 + 3 = 8
    assert (got.text, got.char_start, got.score) == ("Paris now", 3, 9.0)
    assert got.null_score == 18.0


def test_end_before_start_and_max_length():
    start = [0, 0, 0, 1, 0, 6, 0]
    end = [0, 0, 0, 0, 5, 1, 0]
    # best pair 5+5 has end 4 < start 5: skipped; now..now 6+1 = 7
    # vs in..Paris 1+5 = 6
    got = best_span(CTX, [start], [end], [OFFS])
    assert (got.text, got.score) == ("now", 7.0)
    start = [0, 0, 0, 9, 0, 0, 0]
    end = [0, 0, 0, 0, 0, 9, 0]
    got = best_span(CTX, [start], [end], [OFFS], max_answer_length=2)
    # in..now is 3 tokens: too long; best left: in..in 9+0 or in..Paris 9+0
    assert got.text == "in" and got.score == 9.0


def test_across_windows_and_null_minimum():
    ctx = "a b c"
    w0 = [(-1, -1), (0, 1), (2, 3), (-1, -1)]
    w1 = [(-1, -1), (2, 3), (4, 5), (-1, -1)]
    got = best_span(ctx, [np.array([1, 2, 0, 0]), np.array([-2, 0, 4, 0])],
                    [np.array([3, 0, 1, 0]), np.array([1, 0, 3, 0])], [w0, w1])
    # w0 best: a..b 2+1 = 3; w1 best: c..c 4+3 = 7
    assert (got.text, got.char_start, got.window, got.score) == ("c", 4, 1, 7.0)
    assert got.null_score == -1.0  # min(1+3, -2+1)


def test_n_best_limits_candidates():
    start = [0, 0, 0, 3, 2, 1, 0]
    end = [0, 0, 0, 1, 2, 3, 0]
    got = best_span(CTX, [start], [end], [OFFS], n_best=1)
    assert got.text == "in Paris now" and got.score == 6.0
    got = best_span(CTX, [start], [end], [OFFS], n_best=1, max_answer_length=1)
    assert got.text == "" and got.char_start == -1 and got.window == -1
