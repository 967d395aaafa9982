import math

import keras
import numpy as np
import pytest
import yaml

from kdplug import ConfigError
from kdplug import Distiller
from kdplug import Stage
from kdplug import testing
from kdplug.config import ScheduleConfig
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.errors import KdplugError
from kdplug.run.experiment import Experiment
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training import FusedAdamW
from kdplug.training.term_schedule import TermSchedule
from kdplug.training.term_schedule import check_schedules
from kdplug.training.term_schedule import stage_schedules


def test_values_by_hand():
    linear = TermSchedule("t", "linear", start=0.0, end=1.0, steps=4)
    assert [linear.value(s) for s in range(6)] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    cosine = TermSchedule("t", "cosine", start=8.0, end=2.0, steps=4, start_step=2)
    got = [cosine.value(s) for s in range(8)]
    # before start_step: 8; then 2 + 6 * (1 + cos(pi * p)) / 2 for p = 0, .25, ...
    expected = [8.0, 8.0, 8.0, 2 + 3 * (1 + np.sqrt(0.5)), 5.0,
                2 + 3 * (1 - np.sqrt(0.5)), 2.0, 2.0]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    constant = TermSchedule("t", "constant", start=0.3, end=9.0, steps=2)
    assert [constant.value(s) for s in range(3)] == [0.3, 0.3, 0.3]
    with pytest.raises(KdplugError, match="kind"):
        TermSchedule("t", "exponential")


class Recorder(keras.callbacks.Callback):
    """Records the variables' values as the train step sees them."""

    def __init__(self, variables):
        super().__init__()
        self.variables = variables
        self.seen = {name: [] for name in variables}

    def on_train_batch_begin(self, batch, logs=None):
        for name, variable in self.variables.items():
            self.seen[name].append(float(variable.numpy()))


@pytest.mark.slow
def test_sets_weight_and_temperature_every_batch_during_fit():
    teacher = testing.tiny_bert_classifier(num_layers=1, seed=1)
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    soft = SoftTargetCrossEntropy(temperature=4.0, weight=0.5)
    hard = HardLabelCrossEntropy(weight=0.5)
    distiller = Distiller(student, teacher, [soft, hard])
    distiller.compile(optimizer=FusedAdamW(1e-3, weight_decay=0.0), jit_compile=False)
    ds = testing.toy_dataset(num_examples=32, batch_size=8)  # 4 steps per epoch
    schedules = [
        TermSchedule("soft_ce", "linear", start=0.0, end=1.0),  # whole fit: 8 steps
        TermSchedule(soft, "cosine", start=4.0, end=1.0, steps=4, variable="temperature"),
        TermSchedule("hard_ce", "constant", start=0.25),
    ]
    recorder = Recorder({"soft": soft.weight, "T": soft.temperature, "hard": hard.weight})
    history = distiller.fit(ds, epochs=2, callbacks=[*schedules, recorder],
                            verbose=0, shuffle=False)
    np.testing.assert_allclose(recorder.seen["soft"], np.arange(8) / 8, atol=1e-7)
    temps = 1 + 3 * (1 + np.cos(np.pi * np.minimum(np.arange(8) / 4, 1))) / 2
    np.testing.assert_allclose(recorder.seen["T"], temps, rtol=1e-6)
    np.testing.assert_allclose(recorder.seen["hard"], [0.25] * 8)
    assert np.isfinite(history.history["loss"]).all()
    assert schedules[0].get_config()["term"] == "soft_ce"
    assert schedules[1].get_config()["term"] == "soft_ce"


def test_errors_name_the_term():
    teacher = testing.tiny_bert_classifier(num_layers=1, seed=1)
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    distiller = Distiller(student, teacher, [HardLabelCrossEntropy()])
    distiller.compile(optimizer="adam", jit_compile=False)
    ds = testing.toy_dataset(num_examples=8, batch_size=8)
    with pytest.raises(KdplugError, match="no loss term named 'soft'.*hard_ce"):
        distiller.fit(ds, callbacks=[TermSchedule("soft")], verbose=0,
                      shuffle=False)
    # required=False: a term missing from this stage is skipped silently
    optional = TermSchedule("soft", required=False)
    optional.set_model(distiller)
    optional.on_train_begin()
    optional.on_train_batch_begin(0)
    with pytest.raises(KdplugError, match="no scalar variable 'temperature'"):
        distiller.fit(ds, callbacks=[TermSchedule("hard_ce", variable="temperature")],
                      verbose=0, shuffle=False)


# --- `training.schedules:` in configs ------------------------------------------


def tiny_doc(tmp_path, schedules, **training):
    # a classifier used as it is (no teacher.finetune)
    preset = testing.write_tiny_preset(tmp_path / "teacher", num_layers=2,
                                       classifier=True)
    data = testing.write_toy_tsv(tmp_path / "toy.tsv", num_examples=120)
    return {
        "name": "sched",
        "output_dir": str(tmp_path / "runs" / "{name}"),
        "data": {"path": data, "sequence_length": 16},
        "teacher": {"source": preset},
        "method": {"name": "kd", "temperature": 4.0, "alpha": 0.5},
        "student": {"kind": "truncated", "layers": [1]},
        "training": {"epochs": 2, "batch_size": 16, "learning_rate": 1e-3,
                     "jit_compile": False, "verbose": 0,
                     "schedules": schedules, **training},
        "export": False,
    }


def write(tmp_path, doc):
    path = tmp_path / "sched.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.slow
def test_experiment_applies_config_schedules(tmp_path, kdplug_log):
    schedules = [
        # steps: null spans the whole stage, so the end value is reached.
        {"term": "soft_ce", "variable": "temperature", "kind": "linear",
         "start": 4.0, "end": 1.5},
        # longer than the stage: stops part-way along the cosine.
        {"term": "hard_ce", "kind": "cosine", "start": 1.0, "end": 0.2,
         "steps": 100},
        {"term": "soft_ce", "kind": "constant", "start": 0.3, "start_step": 2},
    ]
    config = load_config(write(tmp_path, tiny_doc(tmp_path, schedules)))
    assert config.training.schedules[0] == ScheduleConfig(
        term="soft_ce", start=4.0, kind="linear", end=1.5, variable="temperature")
    assert config.to_dict()["training"]["schedules"][1]["steps"] == 100
    report = Experiment(config).run()
    assert np.isfinite(report["history"]["distill"]["loss"]).all()
    # 84 training examples, batch 16: 6 steps per epoch, 2 epochs.
    assert any("2 epoch(s) x 6 steps" in m for m in kdplug_log())
    terms = tmp_path / "runs" / "sched" / "stages" / "01-distill.terms.npz"
    with np.load(terms) as saved:  # each term's [weight, (temperature)]
        soft_weight, soft_temperature = saved["soft_ce/0"], saved["soft_ce/1"]
        hard_weight = saved["hard_ce/0"]
    assert soft_temperature == pytest.approx(1.5)
    assert soft_weight == pytest.approx(0.3)
    expected = 0.2 + 0.8 * (1 + math.cos(math.pi * 12 / 100)) / 2
    assert hard_weight == pytest.approx(expected, rel=1e-6)


def test_unknown_term_is_a_config_error_listing_the_stage_terms(tmp_path):
    doc = tiny_doc(tmp_path, [{"term": "soft_cee", "kind": "constant", "start": 1.0}])
    config = load_config(write(tmp_path, doc))
    with pytest.raises(ConfigError) as info:
        Experiment(config).run()
    error = info.value
    assert error.field == "training.schedules[0].term"
    assert error.value == "soft_cee"
    text = str(error)
    assert "no loss term named 'soft_cee'" in text
    assert "did you mean 'soft_ce'" in text
    assert "distill: soft_ce, hard_ce" in text
    assert not (tmp_path / "runs" / "sched" / "stages").exists()  # nothing trained


def test_schedule_entries_are_validated_when_the_config_loads(tmp_path):
    def error_for(schedule):
        doc = tiny_doc(tmp_path, [schedule])
        with pytest.raises(ConfigError) as info:
            config_from_dict(doc, file="x.yaml")
        return str(info.value)

    assert "training.schedules[0].kind: must be one of" in error_for(
        {"term": "soft_ce", "kind": "exp", "start": 1.0})
    assert "training.schedules[0].start: required field is missing" in error_for(
        {"term": "soft_ce", "kind": "constant"})
    assert "unknown key 'ende' (did you mean 'end'?)" in error_for(
        {"term": "soft_ce", "start": 1.0, "ende": 2.0})
    assert "end is required for kind 'linear'" in error_for(
        {"term": "soft_ce", "start": 1.0})
    assert "training.schedules[0].steps: must be >= 1 (got 0)" in error_for(
        {"term": "soft_ce", "kind": "constant", "start": 1.0, "steps": 0})
    assert "a temperature must be > 0" in error_for(
        {"term": "soft_ce", "variable": "temperature", "start": 2.0, "end": 0.0})


def test_check_schedules_across_stages():
    soft = SoftTargetCrossEntropy(temperature=2.0)
    hard = HardLabelCrossEntropy()
    stages = [Stage("general", [HardLabelCrossEntropy(name="mlm")]),
              Stage("task", [soft, hard])]
    ok = [ScheduleConfig("soft_ce", 4.0, "linear", end=1.0, variable="temperature"),
          ScheduleConfig("hard_ce", 0.5, "constant", stages=["task"])]
    check_schedules(ok, stages, "m.yaml")  # soft_ce is absent from `general`: fine
    assert stage_schedules(ok, stages[0], 10) == []
    callbacks = stage_schedules(ok, stages[1], 10)
    assert [(c.term, c.variable, c.steps) for c in callbacks] == [
        (soft, "temperature", 10), (hard, "weight", 10)]
    late = stage_schedules(
        [ScheduleConfig("soft_ce", 0.0, "linear", end=1.0, start_step=4)], stages[1], 10)
    assert late[0].steps == 6  # steps: null runs to the end of the stage

    with pytest.raises(ConfigError, match=r"m.yaml: training.schedules\[0\].term: "
                       r"no loss term named 'soft_ce' in stage\(s\) general.*"
                       r"terms by stage: general: mlm"):
        check_schedules([ScheduleConfig("soft_ce", 1.0, "constant", stages=["general"])],
                        stages, "m.yaml")
    with pytest.raises(ConfigError, match=r"schedules\[1\].variable: term 'hard_ce' "
                       r"\(stage task\) has no scalar variable 'temperature'.*"
                       r"it has: weight"):
        check_schedules([ok[0], ScheduleConfig("hard_ce", 1.0, "constant",
                                               variable="temperature")],
                        stages, "m.yaml")
    with pytest.raises(ConfigError, match=r"schedules\[0\].stages: unknown stage "
                       r"'tsak' \(did you mean 'task'\?\); this method's stages: "
                       r"general, task"):
        check_schedules([ScheduleConfig("hard_ce", 1.0, "constant", stages=["tsak"])],
                        stages, "m.yaml")
