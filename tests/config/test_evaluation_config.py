"""`evaluation.metrics`: defaults per task kind, and errors that name the
file, the entry and the value."""

import pytest
import yaml

from kdplug import ConfigError
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.config.sections import EvaluationConfig


def base(**sections):
    return {"name": "t", "data": {"path": "data.tsv"},
            "teacher": {"source": "some/dir"}, "method": {"name": "kd"}, **sections}


def error_for(doc, tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    return str(info.value), str(path)


def test_default_is_the_task_kinds_default():
    config = config_from_dict(base())
    assert config.evaluation.metrics is None
    assert config.evaluation.for_kind("classification") == ["accuracy"]
    assert config.evaluation.for_kind("regression") == ["pearson", "spearman", "mse"]
    assert config.to_dict()["evaluation"] == {"metrics": None, "latency_runs": 30}


def test_configured_metrics_keep_their_order():
    config = config_from_dict(base(evaluation={"metrics": ["mcc", "accuracy",
                                                           "f1_macro"]}))
    assert config.evaluation.for_kind("classification") == ["mcc", "accuracy",
                                                            "f1_macro"]
    assert config.evaluation.for_kind("regression") == []


def test_unknown_metric_names_entry_and_suggests(tmp_path):
    message, path = error_for(base(evaluation={"metrics": ["accuracy", "f1_marco"]}),
                              tmp_path)
    assert message.startswith(f"{path}: evaluation.metrics[1]: unknown metric")
    assert "did you mean 'f1_macro'?" in message and "'f1_marco'" in message


def test_a_metric_of_another_task_kind_names_the_run_s_kind(tmp_path):
    message, _ = error_for(base(evaluation={"metrics": ["entity_f1"]}), tmp_path)
    assert "evaluation.metrics[0]" in message
    assert ("entity_f1 is a metric of token_classification tasks, and this run's "
            "tasks are classification") in message
    assert "classification tasks have accuracy, f1_macro, f1_micro, mcc" in message
    message, _ = error_for(base(evaluation={"metrics": ["pearson"]}), tmp_path)
    assert "pearson is a metric of regression tasks, and this run's tasks " \
           "are classification" in message
    # data.task chooses the kind: the same metrics validate for a regression run
    config = config_from_dict(base(data={"path": "d.tsv", "task": "regression"},
                                   evaluation={"metrics": ["pearson", "mse"]}))
    assert config.task == "regression"
    assert config.evaluation.for_kind("regression") == ["pearson", "mse"]
    # F1 belongs to single- and multi-label classification alike
    assert EvaluationConfig.kinds_of("f1_micro") == ["classification", "multi_label"]
    assert EvaluationConfig(["pearson"]).for_kind("regression") == ["pearson"]


def test_task_kind_checks(tmp_path):
    message, path = error_for(base(data={"path": "d.tsv", "task": "regression"},
                                   method={"name": "fastbert"}), tmp_path)
    assert message.startswith(f"{path}: data.task: method 'fastbert' trains "
                              "classification tasks, not regression; methods for "
                              "regression tasks: ")
    assert "kd" in message and "pkd" in message and "mtdnn-ensemble" in message
    message, _ = error_for(base(data={"path": "d.tsv", "task": "multi_label"},
                                augment=[{"name": "mask", "n": 2}]), tmp_path)
    assert "augment: augmentation labels its new examples" in message
    message, _ = error_for(base(data={"path": "d.tsv", "task": "regression"},
                                training={"early_stopping": True}), tmp_path)
    assert ("training.early_stopping.monitor: regression tasks log val_mse, "
            "val_pearson, val_spearman and val_loss") in message
    assert "(e.g. val_pearson)" in message
    message, _ = error_for(base(data={"path": "d.tsv", "task": "regresion"}), tmp_path)
    assert "data.task" in message and "did you mean 'regression'" in message


@pytest.mark.parametrize("section, expected", [
    ({"metrics": []}, "evaluation: metrics must list at least one metric"),
    ({"metrics": ["mcc", "mcc"]}, "evaluation: metrics lists a metric twice"),
    ({"metric": ["mcc"]}, "did you mean 'metrics'?"),
])
def test_other_errors(section, expected, tmp_path):
    message, _ = error_for(base(evaluation=section), tmp_path)
    assert expected in message
