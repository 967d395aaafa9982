import os

import keras
import numpy as np
import pytest

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug_plugins.pkd.layer_map import pkd_layer_map
from kdplug_plugins.pkd.pkd_method import PKDMethod
from kdplug_plugins.students.truncated import TruncatedStudent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_layer_maps_follow_the_paper():
    # The teacher's top layer is matched by the soft loss, never patient-matched.
    assert pkd_layer_map("skip", 6, 3) == [(2, 1), (4, 2)]
    assert pkd_layer_map("last", 6, 3) == [(4, 1), (5, 2)]
    assert [t for t, _ in pkd_layer_map("skip", 12, 6)] == [2, 4, 6, 8, 10]
    assert [t for t, _ in pkd_layer_map("last", 12, 6)] == [7, 8, 9, 10, 11]
    assert [t for t, _ in pkd_layer_map("skip", 12, 3)] == [4, 8]
    assert pkd_layer_map("skip", 6, 1) == []
    with pytest.raises(KdplugError, match="no deeper"):
        pkd_layer_map("skip", 3, 4)
    with pytest.raises(KdplugError, match="strategy"):
        pkd_layer_map("middle", 6, 3)


@pytest.fixture(scope="module")
def teacher():
    return testing.tiny_bert_classifier(num_layers=6, seed=1)


def build(teacher, strategy, **options):
    method = PKDMethod(PKDMethod.Config(strategy=strategy, **options))
    kind = TruncatedStudent(TruncatedStudent.Config(layers="first_k", num_layers=3,
                                                     dropout=0.0))
    student = method.build_student(teacher, kind, num_classes=2)
    return method, student


@pytest.mark.parametrize("strategy,mapped", [("skip", [2, 4]), ("last", [4, 5])])
def test_trains_tiny_student(teacher, strategy, mapped):
    method, student = build(teacher, strategy, alpha=0.5, beta=10.0, temperature=2.0)
    # first_k: the student starts as the teacher's first 3 layers
    for i in range(3):
        for a, b in zip(student.backbone.transformer_layers[i].get_weights(),
                        teacher.backbone.transformer_layers[i].get_weights()):
            np.testing.assert_array_equal(a, b)
    assert [t for t, _ in method.layer_map(teacher, student)] == mapped
    (stage,) = method.stages(teacher, student)
    soft, hard, patient = stage.terms
    assert (soft.name, hard.name, patient.name) == ("soft_ce", "hard_ce", "patient_cls")
    assert float(soft.weight.numpy()) == 0.5 and float(hard.weight.numpy()) == 0.5
    assert float(patient.weight.numpy()) == 10.0
    assert patient.pairs == tuple((f"cls/{t}", f"cls/{s}") for t, s in zip(mapped, [1, 2]))
    distiller = Distiller(student, teacher, stage.terms)
    assert distiller.teacher_tap_names == sorted({"logits", *(f"cls/{t}" for t in mapped)})
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    history = distiller.fit(testing.toy_dataset(num_examples=32, batch_size=8),
                            epochs=4, verbose=0).history
    for name in ("loss", "soft_ce", "hard_ce", "patient_cls"):
        assert np.isfinite(history[name]).all(), name
    assert history["loss"][-1] < history["loss"][0]
    assert history["patient_cls"][-1] < history["patient_cls"][0]


def test_edge_weights(teacher):
    method, student = build(teacher, "skip", alpha=1.0, beta=0.0)
    (stage,) = method.stages(teacher, student)
    assert [t.name for t in stage.terms] == ["soft_ce"]


def test_configs_validate():
    for name, strategy in (("pkd_skip", "skip"), ("pkd_last", "last")):
        config = load_config(os.path.join(ROOT, "configs", f"{name}.yaml"))
        assert config.method.name == "pkd"
        assert config.method_config.strategy == strategy
        assert config.student_config.layers == "first_k"
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}
    config = config_from_dict({**base, "method": {"name": "pkd"}})
    assert (config.student.name, config.student_config.layers,
            config.student_config.num_layers) == ("truncated", "first_k", 3)
    with pytest.raises(ConfigError, match="method.strategy"):
        config_from_dict({**base, "method": {"name": "pkd", "strategy": "middle"}})
    with pytest.raises(ConfigError, match="alpha"):
        config_from_dict({**base, "method": {"name": "pkd", "alpha": 1.5}})
