"""Task kinds: each gives its own terms, head width and metrics."""

import numpy as np
import pytest

from kdplug.config import EvaluationConfig
from kdplug.config.sections import DataConfig
from kdplug.evaluation.task_metrics import multi_label_metrics
from kdplug.tasks import get_task


def test_each_kind_gives_its_terms_and_head_width():
    data = DataConfig(path="d.tsv", num_classes=3)
    expected = {"classification": ("SoftTargetCrossEntropy", "HardLabelCrossEntropy", 3),
                "regression": ("LogitMSE", "HardLabelMSE", 1),
                "multi_label": ("SoftTargetBinaryCrossEntropy",
                                "HardLabelBinaryCrossEntropy", 3)}
    for name, (soft, hard, width) in expected.items():
        task = get_task(name)
        assert type(task.soft_term(2.0, weight=0.3)).__name__ == soft
        assert type(task.hard_term(0.7, unlabelled="skip")).__name__ == hard
        assert task.num_outputs(data) == width
    # PKD's reference scale reaches the classification term only
    assert get_task("classification").soft_term(2.0, 0.5, class_mean=True).class_mean


def test_metric_names_lead_with_the_primary_metric():
    evaluation = EvaluationConfig(["spearman", "f1_macro", "exact_match"])
    assert get_task("regression").metric_names(evaluation) == ["pearson", "spearman"]
    assert get_task("multi_label").metric_names(evaluation) == [
        "f1_micro", "f1_macro", "exact_match"]
    assert get_task("classification").metric_names(EvaluationConfig()) == ["accuracy"]


def test_multi_label_metrics_by_hand():
    logits = np.array([[2.0, -1.0, 0.5], [-1.0, 1.0, -2.0], [1.0, 1.0, 1.0],
                       [0.0, 9.0, 9.0]])
    gold = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0], [-1, -1, -1]])
    # predicted (logit > 0): [1,0,1] [0,1,0] [1,1,1]; the last row has no gold set
    # TP 4 (r1: 2, r3: 2), FP 2 (r2 label 1, r3 label 2), FN 0
    got = multi_label_metrics(["f1_micro", "f1_macro", "exact_match"], logits, gold)
    assert got["f1_micro"] == pytest.approx(2 * 4 / (2 * 4 + 2 + 0))
    # per label: l0 TP2 -> 1.0; l1 TP1 FP1 -> 2/3; l2 TP1 FP1 -> 2/3
    assert got["f1_macro"] == pytest.approx((1.0 + 2 / 3 + 2 / 3) / 3)
    assert got["exact_match"] == pytest.approx(1 / 3)


def test_unknown_kind_is_named_with_a_suggestion():
    with pytest.raises(KeyError, match="'regresion'.*did you mean 'regression'"):
        get_task("regresion")


def test_the_docs_table_of_methods_and_task_kinds_matches_the_methods():
    import os
    import re

    from kdplug.plugin.manager import get_plugin_manager

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "docs", "configs.md"), encoding="utf-8").read()
    kinds = ["classification", "regression", "multi_label", "token_classification"]
    methods = get_plugin_manager().methods
    rows = re.findall(r"^\| `([\w-]+)`[^|]* \| (.+?) \|$", text, re.M)
    table = {name: cells.split(" | ")[:4] for name, cells in rows if name in methods.names()}
    assert set(table) == set(methods.names())
    for name, cells in table.items():
        declared = getattr(methods.get(name), "task_kinds", ("classification",))
        documented = [kind for kind, cell in zip(kinds, cells) if cell.startswith("yes")]
        if name != "cmlm-seq2seq":
            assert documented == [k for k in kinds if k in declared], name
