import os

import numpy as np
import pytest

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.training import FusedAdamW
from kdplug_plugins.pkd.pkd_method import PKDMethod
from kdplug_plugins.students.truncated import TruncatedStudent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Depth:
    """A stand-in model with only a depth (what a layer mapping reads)."""

    def __init__(self, num_layers):
        self.num_layers = num_layers


def pkd_pairs(strategy, n, m):
    return PKDMethod(PKDMethod.Config(strategy=strategy)).layer_map(Depth(n), Depth(m))


def test_layer_maps_follow_the_paper_through_the_registered_mappings():
    # The teacher's top layer is matched by the soft loss, never patient-matched.
    assert pkd_pairs("skip", 6, 3) == [(2, 1), (4, 2)]
    assert pkd_pairs("last", 6, 3) == [(4, 1), (5, 2)]
    assert [t for t, _ in pkd_pairs("skip", 12, 6)] == [2, 4, 6, 8, 10]
    assert [t for t, _ in pkd_pairs("last", 12, 6)] == [7, 8, 9, 10, 11]
    assert [t for t, _ in pkd_pairs("skip", 12, 3)] == [4, 8]
    assert pkd_pairs("skip", 6, 1) == []
    for strategy in ("skip", "last"):
        with pytest.raises(KdplugError, match="no deeper"):
            pkd_pairs(strategy, 3, 4)
    # the same pairs as the registered strategies a config can name
    from kdplug.mapping import LastMapping
    from kdplug.mapping import SkipMapping

    for n, m in ((6, 3), (12, 6), (12, 4), (6, 6)):
        assert pkd_pairs("skip", n, m) == SkipMapping().layer_pairs(n, m)
        assert pkd_pairs("last", n, m) == LastMapping().layer_pairs(n, m)


@pytest.fixture(scope="module")
def teacher():
    return testing.tiny_bert_classifier(num_layers=6, seed=1)


def build(teacher, strategy, num_layers=3, **options):
    method = PKDMethod(PKDMethod.Config(strategy=strategy, **options))
    kind = TruncatedStudent(TruncatedStudent.Config(layers="first_k",
                                                     num_layers=num_layers,
                                                     dropout=0.0))
    student = method.build_student(teacher, kind, num_classes=2)
    return method, student


@pytest.mark.parametrize("strategy,mapped", [("skip", [2, 4]), ("last", [4, 5])])
def test_stage_maps_teacher_layers(teacher, strategy, mapped):
    method, student = build(teacher, strategy, alpha=0.3, beta=10.0, temperature=2.0)
    assert method.layer_map(teacher, student) == [(mapped[0], 1), (mapped[1], 2)]
    (stage,) = method.stages(teacher, student)
    assert stage.data == "task"
    soft, hard, patient = stage.terms
    assert (soft.name, hard.name, patient.name) == ("soft_ce", "hard_ce", "patient_cls")
    assert float(soft.weight.numpy()) == pytest.approx(0.3)
    assert float(hard.weight.numpy()) == pytest.approx(0.7)
    assert float(soft.temperature.numpy()) == 2.0
    assert soft.class_mean  # the reference code's KLDivLoss(reduction='mean')
    assert float(patient.weight.numpy()) == 10.0
    # beta multiplies the reference code's mean over pairs and features, not
    # the printed sum (which made beta=100 collapse a real student)
    assert patient.average
    assert patient.pairs == ((f"cls/{mapped[0]}", "cls/1"), (f"cls/{mapped[1]}", "cls/2"))
    distiller = Distiller(student, teacher, stage.terms)
    assert distiller.teacher_tap_names == sorted({"logits", *(f"cls/{t}" for t in mapped)})


@pytest.mark.slow
def test_trains_tiny_student():
    # 4 -> 2 layers keeps the test fast: PKD-Skip maps student layer 1 to
    # teacher layer 2 (the teacher's top layer 4 goes through the soft loss).
    teacher = testing.tiny_bert_classifier(num_layers=4, seed=1)
    method, student = build(teacher, "skip", alpha=0.5, beta=10.0, temperature=2.0,
                            num_layers=2)
    assert method.layer_map(teacher, student) == [(2, 1)]
    # first_k: the student starts as the teacher's first layers
    for i in range(2):
        for a, b in zip(student.backbone.transformer_layers[i].get_weights(),
                        teacher.backbone.transformer_layers[i].get_weights()):
            np.testing.assert_array_equal(a, b)
    (stage,) = method.stages(teacher, student)
    assert stage.terms[2].pairs == (("cls/2", "cls/1"),)
    distiller = Distiller(student, teacher, stage.terms)
    distiller.compile(optimizer=FusedAdamW(1e-3, weight_decay=0.0), jit_compile=False)
    # Building the optimizer before fit() saves a second trace of the step.
    distiller.optimizer.build(distiller.trainable_variables)
    history = distiller.fit(testing.toy_dataset(num_examples=32, batch_size=8),
                            epochs=4, verbose=0, shuffle=False).history
    for name in ("loss", "soft_ce", "hard_ce", "patient_cls"):
        assert np.isfinite(history[name]).all(), name
    # (the random tiny teacher's soft targets are near uniform, so soft_ce
    # sits at its floor T^2 * H(teacher) ~ 4 ln 2 from the start)
    assert history["loss"][-1] < history["loss"][0]
    assert history["patient_cls"][-1] < history["patient_cls"][0]


def test_edge_weights(teacher):
    method, student = build(teacher, "skip", alpha=1.0, beta=0.0)
    (stage,) = method.stages(teacher, student)
    assert [t.name for t in stage.terms] == ["soft_ce"]


def test_soft_term_has_the_reference_codes_scale(teacher):
    """`KLDivLoss(reduction='mean')(log q, p) * T^2` over (batch, C): per
    example `T^2 / C * KL`; kdplug logs the cross-entropy, KL + T^2/C H(p)."""
    t = np.array([[2.0, -1.0], [0.0, 1.0]], "float32")
    s = np.array([[0.5, 0.5], [1.0, -1.0]], "float32")
    T = 5.0
    p = np.exp(t / T) / np.exp(t / T).sum(-1, keepdims=True)
    q = np.exp(s / T) / np.exp(s / T).sum(-1, keepdims=True)
    # by hand: row 1, q = [1/2, 1/2]: ln 2; row 2, p = softmax([0, .2]) =
    # [.450166, .549834], -log q = -log softmax([.2, -.2]) = [.513015, .913015]
    ce = -(p * np.log(q)).sum(-1)
    np.testing.assert_allclose(ce, [np.log(2.0), 0.732949], rtol=1e-5)
    method, student = build(teacher, "skip", temperature=T)
    soft = method.stages(teacher, student)[0].terms[0]
    got = np.asarray(soft({"logits": t}, {"logits": s}, {}))
    np.testing.assert_allclose(got, 25.0 * ce / 2, rtol=1e-5)  # T^2 / C, C = 2
    kl = (p * (np.log(p) - np.log(q))).sum(-1)
    reference = 25.0 * kl.sum() / (2 * 2)  # the reference's batch scalar
    entropy = -(p * np.log(p)).sum(-1)
    assert got.mean() == pytest.approx(reference + 25.0 * entropy.mean() / 2, rel=1e-5)
    # soft_class_mean: false sums over the classes, as kd does (2x here)
    method, student = build(teacher, "skip", temperature=T, soft_class_mean=False)
    soft = method.stages(teacher, student)[0].terms[0]
    assert not soft.class_mean
    np.testing.assert_allclose(np.asarray(soft({"logits": t}, {"logits": s}, {})),
                               25.0 * ce, rtol=1e-5)


def test_configs_validate():
    for name, strategy in (("pkd_skip", "skip"), ("pkd_last", "last")):
        config = load_config(os.path.join(ROOT, "configs", f"{name}.yaml"))
        assert config.method.name == "pkd"
        assert config.method_config.strategy == strategy
        assert config.method_config.soft_class_mean is True
        assert config.student_config.layers == "first_k"
        assert config.student_config.init == "pretrained"
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}
    config = config_from_dict({**base, "method": {"name": "pkd"}})
    # the paper's recipe by default: the pre-trained first 3 layers, a new
    # head, the soft loss divided by C
    assert (config.student.name, config.student_config.layers,
            config.student_config.num_layers, config.student_config.init) == (
        "truncated", "first_k", 3, "pretrained")
    assert config.method_config.soft_class_mean is True
    # today's behaviour stays reachable
    config = config_from_dict({**base, "method": {"name": "pkd", "soft_class_mean": False},
                               "student": {"init": "teacher"}})
    assert config.student_config.init == "teacher"
    assert (config.student_config.layers, config.student_config.num_layers) == (
        "first_k", 3)
    assert config.method_config.soft_class_mean is False
    with pytest.raises(ConfigError, match="method.strategy"):
        config_from_dict({**base, "method": {"name": "pkd", "strategy": "middle"}})
    with pytest.raises(ConfigError, match="alpha"):
        config_from_dict({**base, "method": {"name": "pkd", "alpha": 1.5}})
