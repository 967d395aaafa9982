import json
import os
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import KdplugError
from kdplug import testing
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.testing import multi_worker_script
from kdplug.training.custom_loop import CustomLoopTrainer

CLIPNORM = 0.01


def mirrored(devices):
    # Without collective ops: two MirroredStrategy objects over the same CPUs
    # in one process reuse collective instance keys, and a second model with
    # other weight shapes then fails ("Shape mismatch in the collective
    # instance"), even under plain `fit`.
    return tf.distribute.MirroredStrategy(
        devices, cross_device_ops=tf.distribute.ReductionToOneDevice())


def build(strategy, clipnorm=CLIPNORM):
    with strategy.scope():
        teacher = testing.tiny_bert_classifier(num_layers=2, seed=1)
        student = testing.tiny_bert_classifier(num_layers=1, seed=2)
        distiller = Distiller(student, teacher, [
            SoftTargetCrossEntropy(2.0, weight=0.5), HardLabelCrossEntropy(weight=0.5)])
        optimizer = keras.optimizers.Adam(1e-2, global_clipnorm=clipnorm)
    return distiller, optimizer


def student_weights(distiller):
    return [w.numpy() for w in distiller.student.weights]


def assert_same_history(history, expected):
    for key in expected:
        # Accuracy counts argmaxes: on this untrained toy model some logits
        # are near-ties that a 1e-7 difference flips; losses must match.
        atol = 2.5 / 64 if "accuracy" in key else 1e-6
        np.testing.assert_allclose(history[key], expected[key], rtol=1e-5, atol=atol,
                                   err_msg=key)


def assert_same_weights(a, b, atol=1e-5):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=atol)


@pytest.mark.slow
def test_mirrored_custom_loop_matches_fit_on_one_device(cpu_devices):
    train = testing.toy_dataset(64, 16, seed=3)
    val = testing.toy_dataset(32, 16, seed=4)

    one_device = tf.distribute.OneDeviceStrategy(cpu_devices[0])
    distiller, optimizer = build(one_device)
    x, y = next(iter(train))
    with tf.GradientTape() as tape:
        total = distiller.compute_terms(x, y, None, training=True)[0]
    grads = tape.gradient(total, distiller.trainable_variables)
    norm = float(tf.linalg.global_norm([tf.convert_to_tensor(g) for g in grads]))
    assert norm > 2 * CLIPNORM  # every step is clipped: clipping must be global
    with one_device.scope():
        distiller.compile(
            optimizer=optimizer, jit_compile=False,
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    expected = distiller.fit(train, validation_data=val, epochs=3, verbose=0).history
    expected_weights = student_weights(distiller)

    strategy = mirrored(cpu_devices)
    distiller, optimizer = build(strategy)
    trainer = CustomLoopTrainer(distiller, optimizer, strategy)
    history = trainer.fit(train, validation_data=val, epochs=3)

    assert set(history) == set(expected)
    assert_same_history(history, expected)
    assert history["loss"][-1] < history["loss"][0]
    assert_same_weights(student_weights(distiller), expected_weights)
    assert optimizer.global_clipnorm == CLIPNORM  # restored after fit
    assert int(optimizer.iterations.numpy()) == 3 * 4


@pytest.fixture
def saved_epochs(monkeypatch):
    """The epochs `CustomLoopTrainer` writes checkpoints for, in order."""
    saved = []
    save = CustomLoopTrainer._save

    def recording(self, checkpoint, backup_dir):
        saved.append(int(checkpoint.epoch.numpy()))
        save(self, checkpoint, backup_dir)

    monkeypatch.setattr(CustomLoopTrainer, "_save", recording)
    return saved


@pytest.mark.slow
def test_resumes_from_backup_after_an_interruption(tmp_path, saved_epochs):
    train = testing.toy_dataset(48, 16, seed=3)
    distiller, optimizer = build(tf.distribute.get_strategy())
    trainer = CustomLoopTrainer(distiller, optimizer)
    uninterrupted = trainer.fit(train, epochs=3)
    assert trainer.resumed_epoch is None
    expected = student_weights(distiller)

    class Crash(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("preempted")

    backup = str(tmp_path / "backup")
    distiller, optimizer = build(tf.distribute.get_strategy())
    with pytest.raises(RuntimeError, match="preempted"):
        CustomLoopTrainer(distiller, optimizer).fit(
            train, epochs=3, backup_dir=backup, callbacks=[Crash()])
    assert tf.train.latest_checkpoint(backup)  # epoch 1 was saved
    assert saved_epochs == [1]

    distiller, optimizer = build(tf.distribute.get_strategy())  # a new process
    trainer = CustomLoopTrainer(distiller, optimizer)
    resumed = trainer.fit(train, epochs=3, backup_dir=backup)
    assert trainer.resumed_epoch == 1  # what StageRunner reports as resumed
    assert len(resumed["loss"]) == 2  # epochs 2 and 3 only
    assert saved_epochs == [1, 2]  # none after epoch 3: training ended
    np.testing.assert_allclose(resumed["loss"], uninterrupted["loss"][1:], rtol=1e-5)
    assert_same_weights(student_weights(distiller), expected, atol=1e-6)
    assert int(optimizer.iterations.numpy()) == 3 * 3
    assert not os.path.exists(backup)  # removed once training finished


@pytest.mark.slow
def test_stop_training_and_steps_per_epoch(tmp_path, saved_epochs):
    distiller, optimizer = build(tf.distribute.get_strategy(), clipnorm=None)

    class StopAfterTwoBatches(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            assert np.isfinite(logs["loss"]) and set(logs) >= {"soft_ce", "hard_ce"}
            if batch == 1:
                self.model.stop_training = True

    trainer = CustomLoopTrainer(distiller, optimizer)
    history = trainer.fit(testing.toy_dataset(64, 8), epochs=5,
                          callbacks=[StopAfterTwoBatches()],
                          backup_dir=str(tmp_path / "stopped"))
    assert len(history["loss"]) == 1
    assert int(optimizer.iterations.numpy()) == 2
    assert saved_epochs == []  # training ended with that epoch: no checkpoint
    # steps_per_epoch runs over the repeated dataset: 3 epochs x 5 steps of 4 batches
    history = trainer.fit(testing.toy_dataset(32, 8), epochs=3, steps_per_epoch=5,
                          backup_dir=str(tmp_path / "backup"))
    assert len(history["loss"]) == 3
    assert int(optimizer.iterations.numpy()) == 2 + 15
    assert saved_epochs == [1, 2]
    assert not (tmp_path / "backup").exists()


def test_weights_outside_the_strategy_scope_are_a_clear_error(cpu_devices):
    distiller, optimizer = build(tf.distribute.get_strategy())
    with pytest.raises(KdplugError, match="strategy.scope"):
        CustomLoopTrainer(distiller, optimizer, mirrored(cpu_devices))
    with pytest.raises(KdplugError, match="optimizer"):
        CustomLoopTrainer(distiller)


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run_workers(tmp_path, meanwhile=lambda: None, timeout=150):
    """Starts two worker processes, calls `meanwhile()`, waits for them and
    returns `(their outputs, meanwhile's result)`. Kills both and fails (with
    their logs) if they do not finish within `timeout` s."""
    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs, outs, logs = [], [], []
    for index in range(2):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2",
                   KERAS_BACKEND="tensorflow",
                   TF_CONFIG=json.dumps({"cluster": cluster,
                                         "task": {"type": "worker", "index": index}}))
        outs.append(str(tmp_path / f"worker{index}.npz"))
        logs.append(open(tmp_path / f"worker{index}.log", "w+"))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "kdplug.testing.multi_worker_script", outs[-1],
             "--backup-dir", str(tmp_path / f"backup{index}")],
            env=env, stdout=logs[-1], stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    try:
        result = meanwhile()
        for proc in procs:
            proc.wait(timeout=max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    tails = []
    for index, log in enumerate(logs):
        log.seek(0)
        tails.append(f"--- worker {index} (exit {procs[index].returncode}) ---\n"
                     + log.read()[-3000:])
        log.close()
    if any(p.returncode != 0 for p in procs):
        pytest.fail("multi-worker run failed or timed out:\n" + "\n".join(tails))
    return [np.load(path) for path in outs], result


@pytest.mark.slow
def test_two_workers_match_one_process(tmp_path):
    # The single-process reference (`Distiller.fit`) runs while the workers do.
    workers, (expected_weights, expected) = run_workers(
        tmp_path, meanwhile=lambda: multi_worker_script.train(use_fit=True))
    assert [bool(r["chief"]) for r in workers] == [True, False]
    for result in workers:
        assert int(result["replicas"]) == 2
        assert_same_history(json.loads(str(result["history"])), expected)
        weights = [result[f"w{i}"] for i in range(len(expected_weights))]
        assert_same_weights(weights, expected_weights)
    for a, b in zip(*[[r[f"w{i}"] for i in range(len(expected_weights))]
                      for r in workers]):
        np.testing.assert_array_equal(a, b)  # the workers hold identical weights
    assert not (tmp_path / "backup0").exists()  # the chief removed its backup
