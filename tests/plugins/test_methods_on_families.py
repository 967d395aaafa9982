"""The built-in methods on teachers of every keras-hub family (issue #16):
each method's stages, built by the method itself on a truncated student of
the teacher's family, train (the loss of a repeated batch goes down), and a
method that reads a tap the family lacks is refused with the family named.
The table in docs/models.md ("Families") reads its "methods" cells from
here."""

import keras
import numpy as np
import pytest

from kdplug import Distiller
from kdplug import KdplugError
from kdplug.models import HubTextClassifier
from kdplug.plugin.manager import get_plugin_manager
from kdplug import testing
from kdplug.models.hub_family import FAMILIES
from kdplug.students import force_trainable
from kdplug.testing import families

OTHER_FAMILIES = [name for name in FAMILIES if name != "bert"]

# method section -> families it runs on (all but DeBERTaV3 for attention)
METHODS = {
    "kd": ({"temperature": 2.0, "alpha": 0.5}, OTHER_FAMILIES),
    "pkd": ({}, OTHER_FAMILIES),
    "distilbert": ({"mode": "task"}, OTHER_FAMILIES),
    "tinybert": ({"stages": ["task_intermediate", "task_prediction"]},
                 [f for f in OTHER_FAMILIES if f != "deberta_v3"]),
}
STEPS = 2


def stages_of(name, teacher, layers=(0, 2)):
    pm = get_plugin_manager()
    section, _ = METHODS[name]
    method_cls = pm.methods.get(name)
    method = method_cls(method_cls.Config(**section))
    kind_cls = pm.students.get("truncated")
    kind = kind_cls(kind_cls.Config(layers=list(layers), dropout=0.0))
    keras.utils.set_random_seed(1)
    student = method.build_student(teacher, kind, num_classes=2)
    return student, method.stages(teacher, student)


def train_losses(student, teacher, stage):
    """The stage's loss (its weighted terms) on one batch before and after
    `STEPS` training steps on it, labelled with the teacher's predictions."""
    force_trainable(student)
    if stage.trainable is not None:
        stage.trainable(student)
    distiller = Distiller(student=student, teacher=teacher, terms=stage.terms)
    # eager: tiny models, and no graph traced per stage and family
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    x, _ = testing.toy_batch(8)
    y = np.argmax(teacher(x), -1).astype("int32")  # labels the soft targets agree with

    def measured():
        return float(distiller.test_on_batch(x, y, return_dict=True)["loss"])

    before = measured()
    for _ in range(STEPS):
        distiller.train_on_batch(x, y)
    return [before, measured()]


@pytest.mark.slow
@pytest.mark.parametrize("family", OTHER_FAMILIES)
def test_every_method_that_applies_trains_on_the_family(family):
    teacher = HubTextClassifier(
        families.tiny_backbone(family, testing.VOCAB_SIZE, num_layers=3),
        num_classes=2, dropout=0.0)
    # a head with opinions, so that soft targets teach more than ln 2
    rng = np.random.default_rng(0)
    teacher.classifier.kernel.assign(rng.normal(0, 1, teacher.classifier.kernel.shape))
    teacher.trainable = False
    ran = []
    for name, (_, applies) in METHODS.items():
        if family not in applies:
            continue
        student, stages = stages_of(name, teacher)
        for w in student.weights:  # copied teacher layers, moved off the teacher
            w.assign(w + rng.normal(0, 0.2, w.shape))
        assert isinstance(student, HubTextClassifier)
        assert student.family is teacher.family and student.num_layers == 2
        for stage in stages:
            losses = train_losses(student, teacher, stage)
            assert np.isfinite(losses).all(), (name, stage.name, losses)
            assert losses[-1] < losses[0], (name, stage.name, losses)
        ran.append(name)
    assert ran == [m for m, (_, applies) in METHODS.items() if family in applies]


def test_attention_terms_on_deberta_name_the_family():
    teacher = HubTextClassifier(
        families.tiny_backbone("deberta_v3", testing.VOCAB_SIZE, num_layers=3),
        num_classes=2)
    with pytest.raises(KdplugError, match=r"teacher tap 'attention_scores/1'.*"
                                          r"\(keras-hub family deberta_v3\) has no "
                                          "attention"):
        stages_of("tinybert", teacher)
