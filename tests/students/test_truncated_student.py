import numpy as np
import pytest

from kdplug import testing
from kdplug.errors import KdplugError
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
