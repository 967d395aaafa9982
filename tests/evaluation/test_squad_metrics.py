"""SQuAD metrics against hand-computed values."""

import pytest

from kdplug.evaluation.squad_metrics import (
    best_no_answer_threshold, exact_match, f1_score, normalize_answer,
    squad_scores)


def test_normalize_answer():
    assert normalize_answer("The  Cat, a DOG!") == "cat dog"
    assert normalize_answer("an apple") == "apple"
    assert normalize_answer("theatre") == "theatre"  # not an article


def test_exact_and_f1_max_over_gold():
    assert exact_match("the Eiffel Tower", ["Eiffel Tower"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel Tower"]) == 0.0
    # pred "big red tower" vs "red tower": same 2, p=2/3, r=1, f1=0.8
    assert f1_score("big red tower", ["red tower"]) == pytest.approx(0.8)
    # vs "the tower" -> "tower": same 1, p=1/3, r=1 -> 0.5; max = 0.8
    assert f1_score("big red tower", ["the tower", "red tower"]) == pytest.approx(0.8)
    assert f1_score("cat", ["dog"]) == 0.0


def test_unanswerable_gold():
    assert exact_match("", []) == 1.0 and f1_score("", []) == 1.0
    assert exact_match("Paris", []) == 0.0 and f1_score("Paris", []) == 0.0
    assert f1_score("", ["Paris"]) == 0.0


def test_squad_scores_v2_split():
    gold = {"a": ["red tower"], "b": ["Paris"], "c": [], "d": []}
    preds = {"a": "big red tower", "b": "Paris", "c": "", "d": "London"}
    out = squad_scores(preds, gold)
    assert out["exact"] == pytest.approx(50.0)  # b, c
    assert out["f1"] == pytest.approx(100 * (0.8 + 1 + 1 + 0) / 4)
    assert out["HasAns_exact"] == pytest.approx(50.0)
    assert out["HasAns_f1"] == pytest.approx(90.0)
    assert out["NoAns_exact"] == pytest.approx(50.0)
    assert out["NoAns_total"] == 2 and out["HasAns_total"] == 2


def test_v1_has_no_split_for_answerable_only():
    out = squad_scores({"a": "x"}, {"a": ["x"]})
    assert out["exact"] == 100.0 and "NoAns_exact" not in out


def test_best_threshold_by_hand():
    gold = {"a": ["x"], "b": ["y"], "c": []}
    preds = {"a": "x", "b": "z", "c": "w"}
    diffs = {"a": -3.0, "b": -1.0, "c": 2.0}
    exact = {"a": 1.0, "b": 0.0, "c": 0.0}
    # start 1 (c abstains); +a -> 2 at -3 (best); +b -> 2; +c -> 1
    assert best_no_answer_threshold(preds, exact, diffs, gold) == (
        pytest.approx(200 / 3), -3.0)
    out = squad_scores(preds, gold, null_differences=diffs, threshold=0.0)
    # threshold 0: c becomes "", exact a and c
    assert out["exact"] == pytest.approx(200 / 3)
    assert out["best_exact_thresh"] == -3.0
    assert out["best_f1"] == pytest.approx(200 / 3)
