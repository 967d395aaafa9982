import numpy as np
import pytest

from kdplug.evaluation.task_metrics import classification_metrics
from kdplug.evaluation.task_metrics import pearson
from kdplug.evaluation.task_metrics import rank
from kdplug.evaluation.task_metrics import regression_metrics
from kdplug.evaluation.task_metrics import spearman
from kdplug.evaluation.task_metrics import task_metrics

# Three classes, nine labelled examples and one unlabelled (-1, skipped):
#   gold 0 0 0 1 1 2 2 2 2 | -1
#   pred 0 0 1 1 2 2 2 2 0 |  1
GOLD = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, -1])
PRED = np.array([0, 0, 1, 1, 2, 2, 2, 2, 0, 1])
LOGITS = np.eye(3)[PRED] * 2.0 - 1.0


def test_classification_metrics_match_a_confusion_worked_by_hand():
    got = classification_metrics(["accuracy", "f1_macro", "f1_micro", "mcc"],
                                 LOGITS, GOLD)
    # per class (TP, FP, FN): 0 -> (2, 1, 1), 1 -> (1, 1, 1), 2 -> (3, 1, 1)
    f1 = [2 * tp / (2 * tp + fp + fn) for tp, fp, fn in [(2, 1, 1), (1, 1, 1),
                                                         (3, 1, 1)]]
    assert f1 == pytest.approx([2 / 3, 1 / 2, 3 / 4])
    # multi-class MCC: (c*s - sum p_k t_k) / sqrt((s^2 - sum p_k^2)(s^2 - sum t_k^2))
    # with c = 6 correct of s = 9, predicted counts p = true counts t = (3, 2, 4)
    mcc = (6 * 9 - (9 + 4 + 16)) / np.sqrt((81 - 29) * (81 - 29))
    assert got == pytest.approx({"accuracy": 6 / 9, "f1_macro": 23 / 36,
                                 "f1_micro": 6 / 9, "mcc": 25 / 52})
    assert got["f1_macro"] == pytest.approx(sum(f1) / 3)
    assert got["mcc"] == pytest.approx(mcc)
    assert list(got) == ["accuracy", "f1_macro", "f1_micro", "mcc"]


def test_classification_metrics_of_perfect_and_unlabelled_predictions():
    gold = np.array([0, 1, 1, 0])
    perfect = classification_metrics(["f1_macro", "mcc"], np.eye(2)[gold], gold)
    assert perfect == {"f1_macro": 1.0, "mcc": 1.0}
    inverted = classification_metrics(["mcc"], np.eye(2)[1 - gold], gold)
    assert inverted == {"mcc": -1.0}
    assert classification_metrics(["f1_macro"], np.eye(2)[gold], -np.ones(4)) == {
        "f1_macro": 0.0}


def test_regression_metrics_and_constant_inputs():
    pred = np.array([[1.0], [2.0], [3.0], [4.0]])
    gold = np.array([1.0, 3.0, 2.0, 5.0])
    got = regression_metrics(["pearson", "spearman", "mse"], pred, gold)
    a, b = pred[:, 0] - 2.5, gold - 2.75
    assert got["pearson"] == pytest.approx((a * b).sum() / np.sqrt((a * a).sum()
                                                                   * (b * b).sum()))
    # ranks (1, 2, 3, 4) vs (1, 3, 2, 4): 1 - 6 * sum d^2 / (n (n^2 - 1)) = 1 - 12/60
    assert got["spearman"] == pytest.approx(0.8)
    assert got["mse"] == pytest.approx((0 + 1 + 1 + 1) / 4)
    assert pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == 0.0
    assert spearman([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) == 0.0
    assert rank([10.0, 30.0, 20.0, 20.0]).tolist() == [1.0, 4.0, 2.5, 2.5]


def test_task_metrics_keeps_its_shape():
    assert task_metrics("classification", LOGITS, GOLD) == pytest.approx(
        {"accuracy": 6 / 9, "examples": 9})
    assert set(task_metrics("regression", np.ones((3, 1)), np.arange(3.0))) == {
        "pearson", "spearman", "mse", "examples"}


def test_task_metrics_adds_the_configured_ones_to_the_defaults():
    # predictions 1, 0, 1, 1 against 1, 0, 0, 1: accuracy 3/4; F1 of class 0
    # 2*1/(2*1+0+1) = 2/3, of class 1 2*2/(2*2+1+0) = 4/5 -> macro 11/15
    outputs = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
    labels = np.array([1, 0, 0, 1])
    got = task_metrics("classification", outputs, labels, extra=["f1_macro", "accuracy"])
    assert list(got) == ["accuracy", "f1_macro", "examples"]
    assert got["accuracy"] == pytest.approx(0.75)
    assert got["f1_macro"] == pytest.approx(11 / 15)
    assert list(task_metrics("regression", np.array([1.0, 2.0, 3.0]),
                             np.array([1.0, 2.0, 2.0]))) == [
        "pearson", "spearman", "mse", "examples"]
