"""A mixed-precision model as the float32 model a run measures and exports."""

import numpy as np

from kdplug.models import float32_copy
from kdplug.students import truncated_bert
from kdplug.testing import tiny_bert_classifier
from kdplug.testing import toy_batch
from kdplug.training.distribution import precision_policy


def test_a_bfloat16_student_becomes_float32_with_its_weights():
    teacher = tiny_bert_classifier()
    assert float32_copy(teacher) is teacher  # float32 already: itself
    with precision_policy("mixed_bfloat16"):
        student = truncated_bert(teacher, [0], num_classes=2)
    assert student.dtype_policy.name == "mixed_bfloat16"
    copy = float32_copy(student)
    assert copy.dtype_policy.name == "float32" and copy is not student
    assert all(v.dtype == "float32" for v in copy.weights)
    for a, b in zip(copy.get_weights(), student.get_weights()):
        np.testing.assert_array_equal(a, b)
    x, _ = toy_batch()
    float32, bfloat16 = np.asarray(copy(x)), np.asarray(student(x))
    assert float32.dtype == np.float32
    # the same weights: outputs differ by bfloat16's rounding only
    np.testing.assert_allclose(float32, bfloat16.astype("float32"), atol=0.05)
