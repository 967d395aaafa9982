"""`training.mixed_precision` and `training.jit_compile`, checked numerically.

A few `Distiller` steps under each dtype policy (with and without XLA) must give
the float32 losses within a stated tolerance, and the global Keras dtype policy
must be back to what it was afterwards (it would otherwise leak into every later
test).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.errors import ConfigError
from kdplug.terms import CosineHidden
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training.distribution import mirrored_strategy
from kdplug.training.distribution import precision_policy
from kdplug.training.optimizers import make_optimizer

EPOCHS = 2
# Largest |loss - float32 loss| allowed over the 8 logged steps (loss ~2.8).
# Measured (TF 2.21 CPU): XLA 0, mixed_float16 4e-5, mixed_bfloat16 4e-4 (with
# or without XLA): the hidden states differ by ~1e-3 (float16 keeps 11
# significant bits, bfloat16 8). The tolerances are 5x those.
TOLERANCE = {None: 1e-5, "mixed_float16": 2e-4, "mixed_bfloat16": 2e-3}


@pytest.fixture(autouse=True)
def policy_is_restored():
    before = keras.config.dtype_policy().name
    yield
    after = keras.config.dtype_policy().name
    keras.config.set_dtype_policy(before)
    assert after == before, f"the dtype policy leaked: {after}"


def train(policy, jit_compile):
    """Per-step losses of a tiny KD run and the Distiller, under `policy`."""
    with precision_policy(policy):
        teacher = testing.tiny_bert_classifier(num_layers=2, seed=1)
        student = testing.tiny_bert_classifier(num_layers=1, seed=2)
        # the logits of these untrained models are tiny (~1e-2), so a hidden
        # state term makes the precision show in the loss
        distiller = Distiller(student, teacher, [
            SoftTargetCrossEntropy(2.0, weight=0.5), HardLabelCrossEntropy(weight=0.5),
            CosineHidden([("hidden/2", "hidden/1")], weight=1.0)])
        distiller.compile(
            optimizer=make_optimizer("adamw", 3e-3, 8, weight_decay=0.01),
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            jit_compile=jit_compile,
        )
        steps = testing.StepLosses()
        distiller.fit(testing.toy_dataset(64, 16), epochs=EPOCHS, verbose=0,
                      callbacks=[steps])
    return np.array(steps.losses), distiller


@pytest.fixture(scope="module")
def float32_losses():
    return train(None, jit_compile=False)[0]


@pytest.mark.slow
@pytest.mark.parametrize("policy,jit_compile", [
    (None, True),
    ("mixed_float16", False),
    ("mixed_float16", True),
    ("mixed_bfloat16", False),
    # mixed_bfloat16 with XLA: the mirrored XLA run in test_strategy_parity.py
])
def test_losses_match_float32(policy, jit_compile, float32_losses):
    losses, distiller = train(policy, jit_compile)
    assert losses.shape == float32_losses.shape == (EPOCHS * 4,)
    assert np.isfinite(losses).all()
    np.testing.assert_allclose(losses, float32_losses, rtol=0, atol=TOLERANCE[policy])
    student = distiller.student
    compute = {None: "float32", "mixed_float16": "float16",
               "mixed_bfloat16": "bfloat16"}[policy]
    assert student.dtype_policy.compute_dtype == compute
    assert {w.dtype for w in student.trainable_weights} == {"float32"}
    is_scaled = isinstance(distiller.optimizer, keras.optimizers.LossScaleOptimizer)
    assert is_scaled == (policy == "mixed_float16")  # loss scaling for float16 only
    if is_scaled:
        # no step was skipped for an overflow: the inner optimizer took them all
        assert int(distiller.optimizer.inner_optimizer.iterations.numpy()) == EPOCHS * 4
    assert losses[-1] < losses[0]


def test_policy_is_restored_after_an_error():
    with pytest.raises(RuntimeError):
        with precision_policy("mixed_bfloat16") as policy:
            assert policy.name == keras.config.dtype_policy().name == "mixed_bfloat16"
            raise RuntimeError("boom")
    assert keras.config.dtype_policy().name == "float32"
    with precision_policy(None) as policy:  # null: the current policy
        assert policy.name == "float32"


def test_config_field():
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"},
            "method": {"name": "kd"}}
    config = config_from_dict(base)
    assert config.training.mixed_precision is None
    config = config_from_dict({**base, "training": {"mixed_precision": "mixed_bfloat16",
                                                    "jit_compile": False}})
    assert config.training.mixed_precision == "mixed_bfloat16"
    assert config.to_dict()["training"]["mixed_precision"] == "mixed_bfloat16"
    with pytest.raises(ConfigError, match="training.mixed_precision"):
        config_from_dict({**base, "training": {"mixed_precision": "float16"}})


def test_auto_is_bfloat16_where_the_cpu_computes_it(tmp_path, monkeypatch):
    from kdplug.training import distribution

    monkeypatch.setattr(distribution.tf.config, "list_physical_devices", lambda kind: [])
    with_bf16, without = tmp_path / "bf16", tmp_path / "plain"
    with_bf16.write_text("flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile\n")
    without.write_text("flags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n")
    assert distribution.native_bfloat16(str(with_bf16))
    assert not distribution.native_bfloat16(str(without))
    assert not distribution.native_bfloat16(str(tmp_path / "no-such-file"))
    for native, policy in ((True, "mixed_bfloat16"), (False, "float32")):
        monkeypatch.setattr(distribution, "native_bfloat16", lambda: native)
        assert distribution.resolve_mixed_precision("auto") == (
            None if policy == "float32" else policy)
        with precision_policy("auto") as active:
            assert active.name == policy
        assert keras.config.dtype_policy().name == "float32"
    assert distribution.resolve_mixed_precision("mixed_float16") == "mixed_float16"
    assert distribution.resolve_mixed_precision(None) is None


# `kdplug run` under `training.mixed_precision: mixed_bfloat16` (teacher, student
# and terms under the policy, the policy restored afterwards, the saved
# student's policy): tests/training/test_strategy_parity.py::
# test_kdplug_run_mirrored_with_xla.


@pytest.mark.slow
def test_mixed_float16_under_mirrored_strategy_clips_globally(cpu_devices):
    """Loss scaling and clipping across replicas: mixed_float16 on two
    replicas takes one device's steps (every step clipped)."""

    def run(strategy):
        with precision_policy("mixed_float16"), strategy.scope():
            teacher = testing.tiny_bert_classifier(num_layers=2, seed=1)
            student = testing.tiny_bert_classifier(num_layers=1, seed=2)
            distiller = Distiller(student, teacher, [
                SoftTargetCrossEntropy(2.0, weight=0.5),
                HardLabelCrossEntropy(weight=0.5)])
            distiller.compile(optimizer=keras.optimizers.SGD(
                0.1, momentum=0.9, global_clipnorm=0.05), jit_compile=False)
        assert isinstance(distiller.optimizer, keras.optimizers.LossScaleOptimizer)
        history = distiller.fit(testing.toy_dataset(64, 16), epochs=2, verbose=0)
        return history.history["loss"], [w.numpy() for w in student.weights]

    one_loss, one_weights = run(tf.distribute.OneDeviceStrategy(cpu_devices[0]))
    loss, weights = run(mirrored_strategy(
        cpu_devices, cross_device_ops=tf.distribute.ReductionToOneDevice()))
    np.testing.assert_allclose(loss, one_loss, rtol=1e-4)
    for a, b in zip(one_weights, weights):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-4)
