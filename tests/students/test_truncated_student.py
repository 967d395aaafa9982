import numpy as np
import pytest

from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.plugin.student_kind import PretrainedWeights
from kdplug.plugin.student_kind import StudentKind
from kdplug.students import select_layers
from kdplug.students import truncated_bert
from kdplug_plugins.students.truncated import TruncatedStudent


@pytest.fixture(scope="module")
def teacher():
    model = testing.tiny_bert_classifier(num_layers=4, seed=7)
    model.trainable = False  # as the Distiller leaves it
    return model


def test_select_layers_specs():
    assert select_layers("first_k", 6, num_layers=2) == [0, 1]
    assert select_layers("every_other", 6) == [0, 2, 4]
    assert select_layers("every_other", 6, num_layers=2) == [0, 2]
    assert select_layers([5, 1], 6) == [5, 1]
    with pytest.raises(KdplugError, match="first_k needs num_layers"):
        select_layers("first_k", 6)
    with pytest.raises(KdplugError, match="below the teacher's 6 layers"):
        select_layers([6], 6)
    with pytest.raises(KdplugError, match="every_other"):
        select_layers("every_third", 6)


def test_first_k_reproduces_teacher_hidden_states(teacher):
    x, _ = testing.toy_batch(batch_size=4)
    student = TruncatedStudent(
        TruncatedStudent.Config(layers="first_k", num_layers=2)).build(teacher, 2)
    names = ["embeddings", "hidden/1", "hidden/2", "attention_scores/2"]
    s = student.taps(x, names)
    t = teacher.taps(x, names)
    for name in names:  # student layer j == teacher layer j (= layers[j-1] + 1)
        np.testing.assert_allclose(np.asarray(s[name]), np.asarray(t[name]), atol=1e-6)
    # and not by accident: teacher layer 3 differs from both
    t3 = np.asarray(teacher.taps(x, ["hidden/3"])["hidden/3"])
    assert np.abs(t3 - np.asarray(s["hidden/2"])).max() > 1e-2


@pytest.mark.parametrize("spec,expected", [("every_other", [0, 2]), ([3, 1], [3, 1])])
def test_copied_layers_and_order(teacher, spec, expected):
    cfg = TruncatedStudent.Config(layers=spec)
    student = TruncatedStudent(cfg).build(teacher, 2)
    assert student.num_layers == len(expected)
    for j, index in enumerate(expected):
        for a, b in zip(student.backbone.transformer_layers[j].get_weights(),
                        teacher.backbone.transformer_layers[index].get_weights()):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(student.classifier.get_weights()[0],
                                  teacher.classifier.get_weights()[0])


def test_student_of_frozen_teacher_is_fully_trainable(teacher):
    student = truncated_bert(teacher, [0, 3], num_classes=3)
    assert teacher.trainable is False and not teacher.trainable_weights
    assert not student.non_trainable_weights
    trainable = sum(int(np.prod(w.shape)) for w in student.trainable_weights)
    # tiny teacher layer (H=16, I=32): 4(H^2+H) + 2*2H + (HI+I) + (IH+H) = 2224
    V, P, H, C = testing.VOCAB_SIZE, 32, 16, 3
    expected = V * H + P * H + 2 * H + 2 * H + 2 * 2224 + (H * H + H) + (H * C + C)
    assert trainable == expected == student.count_params()
    # 3 classes: the head is new, not copied
    assert student.classifier.get_weights()[0].shape == (16, 3)


def finetuned_teacher(shift=0.5):
    """A tiny teacher, its weights before "fine-tuning", and the teacher
    after a stand-in fine-tuning (every weight moved in place by `shift`),
    then frozen as the Distiller leaves it."""
    teacher = testing.tiny_bert_classifier(num_layers=4, seed=3)
    before = [np.array(w.numpy()) for w in teacher.weights]
    pretrained = PretrainedWeights(teacher)
    for w in teacher.weights:
        w.assign(w.numpy() + shift)
    teacher.trainable = False
    return teacher, before, pretrained


def values(layer):
    return [np.asarray(w) for w in layer.get_weights()]


def test_pretrained_weights_are_a_copy_read_through_the_teachers_layers():
    teacher, before, pretrained = finetuned_teacher()
    layer = teacher.backbone.transformer_layers[2]
    index = {id(w): i for i, w in enumerate(teacher.weights)}
    for got, w in zip(pretrained.get_weights(layer), layer.weights):
        np.testing.assert_array_equal(got, before[index[id(w)]])
        np.testing.assert_array_equal(got + 0.5, w.numpy())  # the teacher moved on
    with pytest.raises(ValueError, match="not part of the model"):
        pretrained.get_weights(testing.tiny_bert_classifier(num_layers=1).classifier)
    # tiny teacher (V=64, P=32, H=16, I=32, 4 layers, 2 classes), float32
    V, P, H = testing.VOCAB_SIZE, 32, 16
    assert pretrained.num_bytes == 4 * (V * H + P * H + 2 * H + 2 * H + 4 * 2224
                                        + (H * H + H) + (H * 2 + 2))


@pytest.mark.parametrize("layers", ["every_other", [3, 1]])
def test_init_pretrained_copies_the_pre_trained_layers_and_a_new_head(layers):
    teacher, before, pretrained = finetuned_teacher()
    kind = TruncatedStudent(TruncatedStudent.Config(layers=layers, init="pretrained"))
    assert kind.needs_pretrained_weights
    kind.pretrained_weights = pretrained
    student = kind.build(teacher, 2)
    expected = select_layers(layers, 4)
    src = teacher.backbone
    for j, index in enumerate(expected):
        s_layer = student.backbone.transformer_layers[j]
        t_layer = src.transformer_layers[index]
        for a, b, now in zip(values(s_layer), pretrained.get_weights(t_layer),
                             values(t_layer)):
            np.testing.assert_array_equal(a, b)   # pre-trained ...
            np.testing.assert_array_equal(a + 0.5, now)  # ... not fine-tuned
    for name in ("token_embedding", "position_embedding", "segment_embedding",
                 "embeddings_layer_norm", "pooled_dense"):
        for a, b in zip(values(getattr(student.backbone, name)),
                        pretrained.get_weights(getattr(src, name))):
            np.testing.assert_array_equal(a, b)
    # a freshly initialised head: neither the pre-trained nor the fine-tuned one
    kernel = student.classifier.get_weights()[0]
    assert kernel.shape == (16, 2)
    assert np.abs(kernel - pretrained.get_weights(teacher.classifier)[0]).max() > 1e-3
    assert np.abs(kernel - teacher.classifier.get_weights()[0]).max() > 1e-3
    np.testing.assert_array_equal(student.classifier.get_weights()[1], np.zeros(2))
    # every student weight trainable although the teacher is frozen
    assert not teacher.trainable_weights
    assert not student.non_trainable_weights
    assert len(student.trainable_weights) == len(student.weights)


def test_init_teacher_copies_the_fine_tuned_layers_and_head():
    teacher, before, pretrained = finetuned_teacher()
    kind = TruncatedStudent(TruncatedStudent.Config(layers=[0, 2]))
    assert kind.config.init == "teacher" and not kind.needs_pretrained_weights
    kind.pretrained_weights = pretrained  # ignored with init: teacher
    student = kind.build(teacher, 2)
    for j, index in enumerate([0, 2]):
        for a, now in zip(values(student.backbone.transformer_layers[j]),
                          values(teacher.backbone.transformer_layers[index])):
            np.testing.assert_array_equal(a, now)
    for a, now in zip(values(student.classifier), values(teacher.classifier)):
        np.testing.assert_array_equal(a, now)
    assert not student.non_trainable_weights


def test_init_pretrained_without_the_weights_says_who_sets_them():
    teacher, _, _ = finetuned_teacher()
    kind = TruncatedStudent(TruncatedStudent.Config(init="pretrained"))
    with pytest.raises(KdplugError, match="pretrained_weights"):
        kind.build(teacher, 2)


def test_init_config_default_and_values():
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"},
            "method": {"name": "kd"}}
    config = config_from_dict({**base, "student": {"kind": "truncated"}})
    assert config.student_config.init == "teacher"
    config = config_from_dict({**base, "student": {"kind": "truncated",
                                                   "init": "pretrained"}})
    assert config.student_config.init == "pretrained"
    with pytest.raises(ConfigError, match="student.init"):
        config_from_dict({**base, "student": {"kind": "truncated", "init": "random"}})


def test_kinds_that_do_not_ask_are_not_given_pretrained_weights():
    """A third-party kind that only implements `build(teacher, num_classes)`."""
    import logging
    import types

    from kdplug.run.teacher_setup import TeacherSetup

    class Plain(StudentKind):
        name = "plain"

        def build(self, teacher, num_classes):
            return teacher

    teacher = testing.tiny_bert_classifier(num_layers=2, seed=0)
    setup = TeacherSetup(types.SimpleNamespace(log=logging.getLogger("test")))
    plain = Plain()
    assert setup.keep_pretrained(teacher, plain) is None
    assert plain.pretrained_weights is None
    assert plain.build(teacher, 2) is teacher
    assert setup.keep_pretrained(teacher, None) is None
    kind = TruncatedStudent(TruncatedStudent.Config(layers=[1], init="pretrained"))
    assert isinstance(setup.keep_pretrained(teacher, kind), PretrainedWeights)
    assert kind.pretrained_weights is not None


@pytest.mark.slow
def test_runner_snapshots_the_teacher_before_fine_tuning(tmp_path):
    """Through `SingleTaskRunner.prepare_teacher`: the `init: pretrained`
    student holds the preset's layers, the `init: teacher` one the
    fine-tuned teacher's."""
    from kdplug.data.readers import read_splits
    from kdplug.run.context import RunContext
    from kdplug.run.single_task import SingleTaskRunner
    from kdplug.teacher.loading import load_teacher
    from kdplug.testing.toy_config import write_toy_config

    path = write_toy_config(
        tmp_path, {"name": "pkd"}, num_examples=96, num_layers=2,
        student={"kind": "truncated", "layers": "first_k", "num_layers": 1},
        teacher={"finetune": {"epochs": 1, "batch_size": 16, "learning_rate": 1e-2}})
    config = load_config(path)
    assert config.student_config.init == "pretrained"  # pkd's default_student
    context = RunContext.create(config)
    runner = SingleTaskRunner(context.method(), context)
    kind = context.student_kind()
    splits = read_splits(config.data, config.resolve_path, seed=config.seed)
    teacher, _, info = runner.prepare_teacher(splits, kind)
    assert info is not None  # fine-tuned
    preset, _, _ = load_teacher(config.teacher, 2, config.resolve_path)
    student = runner.method.build_student(teacher, kind, 2)
    s_layer = values(student.backbone.transformer_layers[0])
    moved = 0.0
    for a, pre, tuned in zip(s_layer, values(preset.backbone.transformer_layers[0]),
                             values(teacher.backbone.transformer_layers[0])):
        np.testing.assert_array_equal(a, pre)
        moved = max(moved, float(np.abs(tuned - pre).max()))
    assert moved > 1e-4  # fine-tuning did change the teacher
    copy = TruncatedStudent(TruncatedStudent.Config(layers="first_k", num_layers=1))
    for a, tuned in zip(values(copy.build(teacher, 2).backbone.transformer_layers[0]),
                        values(teacher.backbone.transformer_layers[0])):
        np.testing.assert_array_equal(a, tuned)
