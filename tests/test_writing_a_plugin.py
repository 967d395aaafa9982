"""Runs the worked example of docs/writing-a-plugin.md as written."""

import pathlib
import re
import sys
import types

import keras
import numpy as np
import pytest

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.plugin.manager import PluginManager

DOC = pathlib.Path(__file__).parents[1] / "docs" / "writing-a-plugin.md"


def load_example_module():
    text = DOC.read_text()
    code = re.search(r"```python file=kdplug_prob_mse.py\n(.*?)```", text, re.S).group(1)
    module = types.ModuleType("kdplug_prob_mse")
    sys.modules["kdplug_prob_mse"] = module
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    return module


def test_documented_term_keeps_the_term_contract():
    # the check the doc's "Testing your plugin" shows
    module = load_example_module()
    rng = np.random.default_rng(0)
    testing.run_term_test(module.ProbabilityMSE(temperature=2.0, weight=0.5),
                          {"logits": rng.normal(size=(4, 3))},
                          {"logits": rng.normal(size=(4, 3)).astype("float32")}, {})


@pytest.mark.slow
def test_documented_plugin_registers_validates_and_trains():
    module = load_example_module()
    pm = PluginManager(load_entrypoints=False)
    import kdplug_plugins.students

    pm.register(kdplug_plugins.students, name="students", source="kdplug")
    record = pm.register(module, name="prob_mse", source="docs-example")
    assert record.status == "ok", record.error
    assert record.registered == ["method:prob-mse"]

    config = config_from_dict(
        {
            "name": "doc",
            "data": {"path": "x.tsv"},
            "teacher": {"source": "unused"},
            "method": {"name": "prob-mse", "temperature": 3.0},
        },
        plugin_manager=pm,
    )
    method = pm.methods.get("prob-mse")(config.method_config)
    assert method.config.temperature == 3.0
    student_kind = pm.students.get(config.student.name)(config.student_config)

    teacher = testing.tiny_bert_classifier(num_layers=2, seed=1)
    teacher.compile(optimizer=keras.optimizers.Adam(3e-3),
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    teacher.fit(testing.toy_dataset(128, 32), epochs=4, verbose=0)
    student = method.build_student(teacher, student_kind, 2)
    assert student.num_layers == 1  # every_other of 2 layers
    (stage,) = method.stages(teacher, student)
    distiller = Distiller(student, teacher, stage.terms)
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = distiller.fit(testing.toy_dataset(128, 32), epochs=3, verbose=0).history
    assert history["prob_mse"][-1] < history["prob_mse"][0]
    assert history["loss"][-1] < history["loss"][0]
