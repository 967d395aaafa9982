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


def test_a_per_token_head_on_another_family_round_trips(tmp_path):
    import keras

    from kdplug.models import HubTextClassifier
    from kdplug.testing import families

    backbone = families.tiny_backbone("roberta", 60)
    model = HubTextClassifier(backbone, num_classes=2, per_token=True)
    x = {"token_ids": np.array([[0, 5, 6, 2, 1, 1]]),
         "padding_mask": np.array([[1, 1, 1, 1, 0, 0]])}
    logits = np.asarray(model.taps(x, ["logits"])["logits"])
    assert logits.shape == (1, 6, 2)
    model.save(tmp_path / "m.keras")
    again = keras.saving.load_model(tmp_path / "m.keras")
    assert again.per_token
    np.testing.assert_allclose(np.asarray(again.taps(x, ["logits"])["logits"]), logits,
                               atol=1e-6)
