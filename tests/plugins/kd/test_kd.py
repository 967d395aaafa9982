"""The `kd` method (plugins/kd): its config, and the terms its one stage
trains with on each task kind."""

import os

import numpy as np
import pytest

from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.plugin.manager import get_plugin_manager
from kdplug.tasks import get_task
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import HardLabelMSE
from kdplug.terms import LogitMSE
from kdplug.terms import SoftTargetCrossEntropy
from kdplug_plugins.kd.kd_method import KDMethod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BASE = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}


def terms(task=None, **options):
    """The terms of kd's stages, `task` its run's task kind."""
    method = KDMethod(KDMethod.Config(**options))
    if task:
        method.task = get_task(task)
    stages = method.stages(teacher=None, student=None)
    assert [stage.name for stage in stages] == ["distill"]
    return stages[0].terms


def test_registered_with_hinton_defaults():
    assert get_plugin_manager().methods.get("kd") is KDMethod
    config = config_from_dict({**BASE, "method": {"name": "kd"}})
    assert (config.method_config.temperature, config.method_config.alpha,
            config.method_config.soft_loss) == (2.0, 0.5, "cross_entropy")
    assert (config.student.name, config.student_config.layers) == (
        "truncated", "every_other")


@pytest.mark.parametrize("option, value", [
    ("alpha", 1.5), ("alpha", -0.1), ("temperature", 0), ("soft_loss", "kl")])
def test_config_refuses_values_out_of_range(option, value):
    with pytest.raises(ConfigError) as info:
        config_from_dict({**BASE, "method": {"name": "kd", option: value}})
    assert info.value.field == f"method.{option}"


def test_soft_targets_weighted_alpha_and_hard_labels_one_minus_alpha():
    soft, hard = terms(temperature=4.0, alpha=0.7)
    assert isinstance(soft, SoftTargetCrossEntropy) and not soft.class_mean
    assert soft.initial_temperature == 4.0
    assert isinstance(hard, HardLabelCrossEntropy)
    assert (soft.initial_weight, hard.initial_weight) == pytest.approx((0.7, 0.3))
    # T^2 times the cross-entropy of the temperature-softened distributions
    t = np.array([[2.0, 0.0]], "float32")
    s = np.array([[0.0, 1.0]], "float32")
    p = np.exp(t / 4) / np.exp(t / 4).sum(-1, keepdims=True)
    q = np.exp(s / 4) / np.exp(s / 4).sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(soft({"logits": t}, {"logits": s}, {})),
                               16.0 * -(p * np.log(q)).sum(-1), rtol=1e-5)


def test_mse_soft_loss_and_no_hard_term_at_alpha_one():
    (soft,) = terms(soft_loss="mse", alpha=1.0)
    assert isinstance(soft, LogitMSE) and soft.name == "soft_mse"
    assert soft.initial_weight == 1.0


def test_terms_take_the_task_kinds_form():
    soft, hard = terms(task="regression")
    assert isinstance(soft, LogitMSE) and isinstance(hard, HardLabelMSE)
    assert set(KDMethod.task_kinds) == {
        "classification", "regression", "multi_label", "token_classification",
        "extractive_qa"}


def test_shipped_kd_configs_validate():
    for name in ("quickstart", "regression", "multi_label", "token_classification",
                 "extractive_qa"):
        config = load_config(os.path.join(ROOT, "configs", f"{name}.yaml"))
        assert config.method.name == "kd", name
        assert isinstance(config.method_config, KDMethod.Config)
