"""MirroredStrategy parity for every built-in method plugin.

Each case builds the method's student and stages as `kdplug run` does (the
registered plugin, `build_student`, `stages`, the stage's trainable selector,
`stage_dataset`, a `Distiller` per stage).

What makes a method's multi-replica run match one device is that each of
its terms returns per-example losses that do not depend on the rest of the
batch (the Distiller then scales by the global batch).
`test_terms_are_per_example` checks that for every case, eagerly and
without training: each stage's terms on a batch of 8 equal the same terms on
its two halves, concatenated (one eager check of a few seconds where a
two-strategy training costs tens of seconds). Three cases also train every
stage for a few steps twice, under `MirroredStrategy` over two logical CPUs
(each replica gets half of the global batch) and under `OneDeviceStrategy`
with the same global batch; per-step losses, per-term means and the
student's final weights must match: kd (with gradient clipping,
`test_clipping_is_global`; also tests/training/test_distiller.py), TinyBERT
(its projections, weights outside the student, built in the strategy's
scope) and MobileBERT PKT (progressive stages, each with its trainable
selector) (`MIRRORED_CASES`).

One case per distinct set of terms and student kind: variants that only
change a term's options or the layer mapping (kd with an MSE soft loss, PKD's
`last` strategy, the plain BiLSTM next to the siamese one) reduce their
per-example losses the same way, so they add time and no coverage; for the
same reason DistilBERT and TinyBERT run their general stages only (their
task stages' terms are kd's).

- Dropout is switched off: its masks are drawn per replica, so they cannot
  match one device's.
- The optimizer is SGD with momentum. Its update is linear in the gradient, so
  any error in how a term's loss is reduced across replicas shows in the
  weights, and float32 summation-order noise stays at ~1e-7. Adam divides by
  sqrt(v) + 1e-6: on weights whose gradient is a near-cancelling sum (~1e-6)
  that noise becomes ~1e-4 after three steps (seen on mobilebert-pkt with
  kdplug's AdamW), which would force a tolerance too loose to catch real bugs.
- `test_clipping_is_global` covers kdplug's optimizers' gradient clipping, which
  Keras applies per replica before the all-reduce and `Distiller.train_step`
  corrects (`kdplug.training.clipping.clip_across_replicas`).
- The method cases and two of the clipping cases run Keras' train step
  eagerly (`run_eagerly=True`): the same `train_step`, the same
  `strategy.run` and all-reduces, without tracing every stage twice (a
  toy stage's trace costs more than its three steps: 75 -> 37 s on three
  cases). The graph-mode path under `MirroredStrategy` is kept by the
  `kdplug-adamw` clipping case (kdplug's own optimizer, the one `kdplug run`
  uses), tests/training/test_distiller.py's parity test and the mirrored
  XLA run below.
"""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf
import yaml

from kdplug import Distiller
from kdplug import testing
from kdplug.config import load_config
from kdplug.data.masking import stage_dataset
from kdplug.plugin.manager import get_plugin_manager
from kdplug.run.experiment import Experiment
from kdplug.students.utils import force_trainable
from kdplug.testing.toy_config import write_toy_config
from kdplug.training.distribution import mirrored_strategy
from kdplug.training.optimizers import make_optimizer

GLOBAL_BATCH = 8  # 4 examples per replica
STEPS = 3  # optimizer steps per stage
LEARNING_RATE = 5e-2
# toy data (kdplug.testing.toy_arrays): [PAD] = 0, [CLS] = 2, tokens 4..63
TOKENIZER = types.SimpleNamespace(
    vocabulary_size=lambda: testing.VOCAB_SIZE, mask_token_id=3, cls_token_id=2,
    sep_token_id=1, pad_token_id=0,
)
TRUNCATED = {"kind": "truncated", "layers": [0, 2]}
BILSTM = {"embedding_dim": 8, "lstm_units": 8, "hidden_dim": 8}

# (method options, student section); the teacher has 4 layers, width 16.
CASES = {
    "kd": ({"name": "kd"}, TRUNCATED),
    "pkd-skip": ({"name": "pkd", "strategy": "skip", "beta": 10.0},
                 {"kind": "truncated", "layers": "first_k", "num_layers": 3}),
    # the general stages only: the task stages' soft and hard cross-entropy
    # are kd's terms (its clipped runs below)
    "distilbert": ({"name": "distilbert", "mode": "general"}, TRUNCATED),
    "tinybert": ({"name": "tinybert", "stages": ["general"]},
                 {"kind": "narrow", "num_layers": 2, "hidden_dim": 8,
                  "intermediate_dim": 16, "num_heads": 2}),
    # progressive: layer_1 (the student has one block), then distill
    # (unit weights: the reference's 100 / 5000 / 5 would make SGD diverge)
    "mobilebert-pkt": ({"name": "mobilebert-pkt", "alpha": 0.5, "feature_map_weight": 1.0,
                        "mean_weight": 1.0, "variance_weight": 1.0},
                       {"kind": "bottleneck", "preset": "tiny", "num_layers": 1,
                        "intra_dim": 8, "num_heads": 2, "intermediate_dim": 16,
                        "num_feedforward": 1, "embedding_dim": 8}),
    "bilstm-siamese": ({"name": "bilstm-siamese"}, {"kind": "bilstm-siamese", **BILSTM}),
    "fastbert": ({"name": "fastbert", "branch_dim": 8}, {"kind": "truncated"}),
}
# trained under both strategies (the others: test_terms_are_per_example)
MIRRORED_CASES = ("tinybert", "mobilebert-pkt")


def dataset():
    """Toy batches of GLOBAL_BATCH; the siamese student's second sentence is
    the first one reversed."""
    x, y = testing.toy_arrays(num_examples=GLOBAL_BATCH * STEPS, seed=5)
    x["token_ids_b"] = x["token_ids"][:, ::-1].copy()
    x["padding_mask_b"] = x["padding_mask"][:, ::-1].copy()
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)


def no_dropout(model):
    for layer in model._flatten_layers():
        if isinstance(layer, keras.layers.Dropout):
            layer.rate = 0.0


class StepLogs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.logs = []

    def on_train_batch_end(self, batch, logs=None):
        self.logs.append({k: float(v) for k, v in (logs or {}).items()})


def sgd():
    return keras.optimizers.SGD(LEARNING_RATE, momentum=0.9)


def build(case):
    """`(teacher, student, stages)` of a case, as `kdplug run` builds them
    (call it in the strategy's scope)."""
    method_section, student_section = CASES[case]
    pm = get_plugin_manager()
    method_cls = pm.methods.get(method_section["name"])
    method = method_cls(method_cls.Config(
        **{k: v for k, v in method_section.items() if k != "name"}))
    kind_cls = pm.students.get(student_section["kind"])
    kind = kind_cls(kind_cls.Config(
        **{k: v for k, v in student_section.items() if k != "kind"}))
    teacher = testing.tiny_bert_classifier(num_layers=4, seed=1)
    keras.utils.set_random_seed(2)
    student = method.build_student(teacher, kind, num_classes=2)
    no_dropout(student)
    return teacher, student, method.stages(teacher, student)


def stage_batches(student, stages):
    """Each stage (its trainable selector applied) with its dataset."""
    for index, stage in enumerate(stages):
        force_trainable(student)
        if stage.trainable is not None:
            stage.trainable(student)
        yield stage, stage_dataset(dataset(), stage, TOKENIZER, seed=index)


def train(case, strategy, optimizer=sgd, run_eagerly=True):
    """Trains every stage of a case under `strategy`, as `kdplug run` does,
    Keras' train step run eagerly (traced, as `kdplug run` runs it, with
    `run_eagerly=False`).

    Returns `(per-step logs per stage, final student weights)`.
    """
    with strategy.scope():
        teacher, student, stages = build(case)
    logs = {}
    for stage, ds in stage_batches(student, stages):
        with strategy.scope():
            distiller = Distiller(student, teacher, stage.terms)
            distiller.compile(
                optimizer=optimizer(),
                metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                jit_compile=False, run_eagerly=run_eagerly,
            )
        steps = StepLogs()
        distiller.fit(ds, epochs=1, verbose=0, shuffle=False, callbacks=[steps])
        logs[stage.name] = steps.logs
    return logs, [w.numpy() for w in student.weights]


# `kd` and `fastbert` in the fast tier (`pytest -m "not slow"`), every other
# case (each over about 1.5 s) in the full suite.
@pytest.mark.parametrize("case", [
    c if c in ("kd", "fastbert") else pytest.param(c, marks=pytest.mark.slow)
    for c in CASES
])
def test_terms_are_per_example(case):
    """Every stage's terms on a batch of 8 equal the same terms on its two
    halves of 4, concatenated: no term reads the rest of its batch, so each
    replica's share of a global batch gives the single-device losses."""
    teacher, student, stages = build(case)
    # Weights moved off their initialisation: a fresh toy model gives every
    # example nearly the same outputs (soft losses equal to 1e-6), which a
    # term mixing the batch would match too.
    rng = np.random.default_rng(0)
    for w in teacher.weights + student.weights:
        w.assign(w + rng.normal(0, 0.5, w.shape).astype(w.dtype))

    def per_term(distiller, x, y, rows):
        part = {k: v[rows] for k, v in x.items()}
        _, losses, _, _ = distiller.compute_terms(part, y[rows], None, training=False)
        return [keras.ops.convert_to_numpy(loss) for loss in losses]

    checked = 0
    for stage, ds in stage_batches(student, stages):
        x, y = next(iter(ds))  # the stage's batch (masked, for MLM stages)
        distiller = Distiller(student, teacher, stage.terms)
        whole = per_term(distiller, x, y, slice(0, GLOBAL_BATCH))
        halves = [per_term(distiller, x, y, slice(start, start + GLOBAL_BATCH // 2))
                  for start in (0, GLOBAL_BATCH // 2)]
        for term, full, first, second in zip(stage.terms, whole, *halves):
            assert full.shape == (GLOBAL_BATCH,), (case, stage.name, term.name)
            # examples differ, so a term that mixed them would show
            assert np.ptp(full) > 1e-3, (case, stage.name, term.name, full)
            np.testing.assert_allclose(
                np.concatenate([first, second]), full, rtol=1e-5, atol=1e-6,
                err_msg=f"{case}: stage {stage.name}, term {term.name}")
            checked += 1
    assert checked >= len(stages)


def test_a_term_that_mixes_its_batch_is_caught(monkeypatch):
    """The check above fails for a soft loss made half its batch's mean."""
    from kdplug.terms.soft_target_cross_entropy import SoftTargetCrossEntropy

    call = SoftTargetCrossEntropy.call

    def half_batch_mean(self, teacher, student, batch):
        loss = call(self, teacher, student, batch)
        return 0.5 * loss + 0.5 * keras.ops.mean(loss)

    monkeypatch.setattr(SoftTargetCrossEntropy, "call", half_batch_mean)
    with pytest.raises(AssertionError, match="stage distill, term soft_ce"):
        test_terms_are_per_example("kd")


# Trained under both strategies: the cases whose plumbing is more than their
# terms (the module docstring); `kd` trains under both in its clipped runs
# below and in the Distiller's own parity test (tests/training/test_distiller.py).
@pytest.mark.slow
@pytest.mark.parametrize("case", MIRRORED_CASES)
def test_mirrored_matches_one_device(case, cpu_devices):
    one_logs, one_weights = train(case, tf.distribute.OneDeviceStrategy(cpu_devices[0]))
    mirrored_logs, mirrored_weights = train(case, mirrored(cpu_devices))
    assert_same(case, one_logs, one_weights, mirrored_logs, mirrored_weights)


def mirrored(devices):
    # Several MirroredStrategy objects over the same devices in one process:
    # not with collective ops (the default on CPUs), see mirrored_strategy.
    return mirrored_strategy(devices,
                             cross_device_ops=tf.distribute.ReductionToOneDevice())


def assert_same(case, one_logs, one_weights, mirrored_logs, mirrored_weights,
                atol=1e-5):
    assert list(mirrored_logs) == list(one_logs)
    for stage, steps in one_logs.items():
        assert len(steps) == STEPS, stage
        assert len(mirrored_logs[stage]) == STEPS, stage
        for i, (expected, got) in enumerate(zip(steps, mirrored_logs[stage])):
            assert set(got) == set(expected)
            for key, value in expected.items():
                # accuracy counts argmaxes of an untrained model: near-ties
                # may flip on a 1e-7 difference; the losses must match
                atol = 1.5 / GLOBAL_BATCH if key == "accuracy" else 1e-5
                np.testing.assert_allclose(
                    got[key], value, rtol=1e-4, atol=atol,
                    err_msg=f"{case}: stage {stage}, step {i + 1}, {key}")
    first = one_logs[next(iter(one_logs))]
    assert np.isfinite(first[-1]["loss"]) and first[-1]["loss"] > 0
    assert len(one_weights) == len(mirrored_weights)
    for a, b in zip(one_weights, mirrored_weights):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=atol)


CLIPPING = {
    # kdplug's optimizers (make_optimizer) clip with global_clipnorm=1.0; these
    # limits are below the toy gradients' norms, so every step is clipped.
    "global_clipnorm": lambda: keras.optimizers.SGD(LEARNING_RATE, momentum=0.9,
                                                    global_clipnorm=0.05),
    "clipnorm": lambda: keras.optimizers.SGD(LEARNING_RATE, momentum=0.9,
                                             clipnorm=0.01),
    "kdplug-adamw": lambda: make_optimizer("adamw", LEARNING_RATE, 2 * STEPS,
                                           weight_decay=0.01),
}


@pytest.mark.slow
@pytest.mark.parametrize("clipping", list(CLIPPING))
def test_clipping_is_global(clipping, cpu_devices, monkeypatch):
    """Clipping under MirroredStrategy gives the single-device step; Keras
    alone clips each replica's share (checked to differ, for global_clipnorm)."""
    optimizer = CLIPPING[clipping]
    eager = clipping != "kdplug-adamw"  # kdplug's optimizer: the traced step
    one = train("kd", tf.distribute.OneDeviceStrategy(cpu_devices[0]), optimizer, eager)
    got = train("kd", mirrored(cpu_devices), optimizer, eager)
    # AdamW (see the module docstring): float32 noise, amplified
    assert_same("kd", *one, *got, atol=1e-3 if clipping == "kdplug-adamw" else 1e-5)
    if clipping == "global_clipnorm":
        monkeypatch.setattr("kdplug.training.distiller.clip_across_replicas",
                            lambda optimizer, grads: grads)
        with pytest.raises(AssertionError, match="Not equal to tolerance"):
            assert_same("kd", *one, *train("kd", mirrored(cpu_devices), optimizer, eager))


@pytest.mark.slow
def test_kdplug_run_mirrored_with_xla(tmp_path, cpu_devices, kdplug_log):
    """One `kdplug run` for the run-level switches of speed and precision
    (each is a toy run of its own otherwise):

    - `strategy: mirrored` + `jit_compile: true` (two logical CPUs here):
      Keras' fit cannot XLA-compile a multi-replica step, so the stages run
      in the custom loop; the teacher is fine-tuned with fit, without XLA.
    - `teacher.pipeline`: the teacher runs in the input pipeline, its copy's
      plain variables read by the pipeline of a run whose student and
      teacher live in a mirrored scope.
    - `mixed_precision: mixed_bfloat16`: teacher, student and terms under
      the policy, the global policy restored afterwards, the saved student
      computes in float32 (what a run measures and exports).
    """
    # teacher fine-tuned 1 epoch, 2 epochs of distillation (the defaults)
    path = write_toy_config(
        tmp_path, {"name": "kd"}, num_examples=160,
        student={"kind": "truncated", "layers": [1]},
        teacher={"pipeline": {"dtype": "bfloat16"}},
        training={"strategy": "mirrored", "jit_compile": True,
                  "mixed_precision": "mixed_bfloat16"}, export=False)
    report = Experiment(load_config(path)).run()
    assert len(cpu_devices) == 2
    assert "strategy: MirroredStrategy, 2 replicas" in kdplug_log()
    assert any("teacher pipeline: bfloat16" in line for line in kdplug_log())
    loss = report["history"]["distill"]["loss"]
    assert len(loss) == 2 and np.isfinite(loss).all() and loss[-1] < loss[0]
    steps = 112 // 16  # 70% of 160 examples
    assert f"stage distill: done, {2 * steps} optimizer steps" in kdplug_log()
    run_dir = tmp_path / "runs" / "toy"
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["teacher"]["pipeline"] == {"dtype": "bfloat16", "trim_padding": True,
                                            "length_chunks": 4, "jit_compile": None}
    assert keras.config.dtype_policy().name == "float32"
    student = keras.saving.load_model(str(run_dir / "student.keras"))
    assert student.dtype_policy.name == "float32"
