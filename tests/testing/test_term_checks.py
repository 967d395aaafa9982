"""`kdplug.testing.run_term_test` and `run_serialization_test`: a term that
keeps the `Term` contract passes, and each way of breaking it fails with a
message naming the broken promise."""

import keras
import numpy as np
import pytest
from keras import ops

from kdplug.mapping import Projection
from kdplug.terms import AttentionTransfer
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.terms import Term
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test

RNG = np.random.default_rng(0)
TEACHER = {"logits": RNG.normal(size=(4, 3)).astype("float32")}
STUDENT = {"logits": RNG.normal(size=(4, 3)).astype("float32")}


@keras.saving.register_keras_serializable(package="kdplug_tests")
class L1Logits(Term):
    """The `Term` docstring's example, as a plugin author writes it."""

    teacher_taps = ("logits",)
    student_taps = ("logits",)

    def call(self, teacher, student, batch):
        return ops.mean(ops.abs(teacher["logits"] - student["logits"]), -1)


@keras.saving.register_keras_serializable(package="kdplug_tests")
class BatchMixing(SoftTargetCrossEntropy):
    def call(self, teacher, student, batch):
        loss = super().call(teacher, student, batch)
        return 0.5 * loss + 0.5 * ops.mean(loss)


@keras.saving.register_keras_serializable(package="kdplug_tests")
class BatchMean(L1Logits):
    def call(self, teacher, student, batch):
        return ops.mean(super().call(teacher, student, batch))


@keras.saving.register_keras_serializable(package="kdplug_tests")
class Squeezed(L1Logits):
    def call(self, teacher, student, batch):
        return ops.squeeze(ops.expand_dims(super().call(teacher, student, batch), -1))


@keras.saving.register_keras_serializable(package="kdplug_tests")
class Weighted(L1Logits):
    def call(self, teacher, student, batch):
        return self.weight * super().call(teacher, student, batch)


@keras.saving.register_keras_serializable(package="kdplug_tests")
class ForgetfulConfig(AttentionTransfer):
    def get_config(self):
        config = super().get_config()
        del config["head_reduction"]
        return config


@keras.saving.register_keras_serializable(package="kdplug_tests")
class ReadsPadding(Term):
    teacher_taps = ("hidden/1",)
    student_taps = ("hidden/1",)

    def call(self, teacher, student, batch):  # no padding_mask
        return ops.mean(ops.square(teacher["hidden/1"] - student["hidden/1"]), (1, 2))


class Unregistered(L1Logits):
    pass


class ReadsUndeclared(L1Logits):
    teacher_taps = ()


def test_a_term_that_keeps_the_contract_passes():
    losses = run_term_test(L1Logits(weight=0.5), TEACHER, STUDENT, {},
                           expected=np.abs(TEACHER["logits"] - STUDENT["logits"]).mean(-1))
    assert losses.shape == (4,)


@pytest.mark.parametrize("term, message", [
    (BatchMixing(), "two halves"),
    (BatchMean(), "one loss per example"),
    (Squeezed(), "for one example"),
    (Weighted(weight=0.5), "another `weight`"),
    (Unregistered(), "register it"),
])
def test_each_broken_promise_fails(term, message):
    with pytest.raises(AssertionError, match=message):
        run_term_test(term, TEACHER, STUDENT, {})


def test_wrong_values_an_undeclared_tap_and_a_uniform_batch_fail():
    with pytest.raises(AssertionError, match="not the expected losses"):
        run_term_test(L1Logits(), TEACHER, STUDENT, {}, expected=[0.0] * 4)
    with pytest.raises(KeyError, match="logits"):
        run_term_test(ReadsUndeclared(), TEACHER, STUDENT, {})
    same = {"logits": np.ones((4, 3), "float32")}
    with pytest.raises(AssertionError, match="losses differ"):
        run_term_test(L1Logits(), same, {"logits": np.zeros((4, 3), "float32")}, {})


def test_a_term_that_reads_padded_tokens_fails():
    hidden = {"hidden/1": RNG.normal(size=(3, 4, 2)).astype("float32")}
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], "int32")
    with pytest.raises(AssertionError, match="padded tokens"):
        run_term_test(ReadsPadding(), hidden, {"hidden/1": np.zeros((3, 4, 2), "float32")},
                      {"padding_mask": mask})
    run_term_test(ReadsPadding(), hidden, {"hidden/1": np.zeros((3, 4, 2), "float32")},
                  {"padding_mask": mask}, padding=False)


def test_a_config_that_forgets_an_argument_fails():
    # configs of the original and its clone agree (both lack the key): the
    # attributes tell them apart
    with pytest.raises(AssertionError, match="changed attributes.*head_reduction"):
        run_serialization_test(ForgetfulConfig([("attention/1", "attention/1")],
                                               head_reduction="group"))


def test_a_layer_round_trips_with_its_weights():
    projection = Projection(4, 2, name="fit_dense")
    projection.set_weights([RNG.normal(size=w.shape) for w in projection.weights])
    clone = run_serialization_test(projection)
    assert (clone.input_dim, clone.output_dim) == (2, 4)
