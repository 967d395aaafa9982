"""mtdnn-ensemble: loss terms, ensemble averaging, task sampling, the
multi-head student and a tiny end-to-end run."""

import copy
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
import yaml

import kdplug_plugins.mtdnn as mtdnn_plugin
from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.data.length_buckets import LengthBuckets
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.evaluation import predict_outputs
from kdplug.evaluation.task_metrics import rank
from kdplug.evaluation.task_metrics import task_metrics
from kdplug.plugin.manager import PluginManager
from kdplug.run.experiment import Experiment
from kdplug.students import truncated_bert
from kdplug.testing import write_toy_tsv
from kdplug.testing.toy_config import shared_toy_teacher
from kdplug.testing.toy_config import write_toy_config
from kdplug.training import FusedAdamW
from kdplug_plugins.mtdnn.mtdnn_method import MTDNNEnsembleMethod
from kdplug_plugins.mtdnn.multi_task_hard_loss import MultiTaskHardLoss
from kdplug_plugins.mtdnn.multi_task_soft_loss import MultiTaskSoftLoss
from kdplug_plugins.mtdnn.multi_task_student import MultiTaskStudent
from kdplug_plugins.mtdnn.sampling import mixture_dataset
from kdplug_plugins.mtdnn.sampling import sampling_probabilities
from kdplug_plugins.mtdnn.sampling import task_choices
from kdplug_plugins.mtdnn.teacher_ensemble import average_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TASKS = [
    {"name": "sst", "type": "classification", "num_outputs": 3},
    {"name": "stsb", "type": "regression", "num_outputs": 1},
]


def plugin_manager():
    """The installed plugins, plus this one when the entry points predate it
    (an editable install not refreshed since the plugin was added)."""
    pm = PluginManager()
    if "mtdnn-ensemble" not in pm.methods:
        pm.register(mtdnn_plugin, name="mtdnn", source="tests")
    return pm


def softmax(z):
    z = np.asarray(z, "float64")
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# --------------------------------------------------------------- config
def test_registered_and_config_validates():
    pm = plugin_manager()
    assert pm.methods.get("mtdnn-ensemble") is MTDNNEnsembleMethod
    path = os.path.join(ROOT, "configs", "mtdnn_ensemble.yaml")
    cfg = load_config(path, plugin_manager=pm)
    mcfg = cfg.method_config
    assert [t.name for t in mcfg.tasks] == [
        "movie_sentiment", "movie_score", "tweet_sentiment"]
    assert mcfg.tasks[1].type == "regression" and not mcfg.tasks[0].teacher
    assert mcfg.ensemble_size == 2 and cfg.student.name == "truncated"
    with open(path) as f:
        doc = yaml.safe_load(f)

    def error(edit):
        bad = copy.deepcopy(doc)
        edit(bad)
        with pytest.raises(ConfigError) as e:
            config_from_dict(bad, file=path, plugin_manager=pm)
        return e.value

    e = error(lambda d: d["method"]["tasks"][0].update(type="regresion"))
    assert e.field == "method.tasks[0].type" and e.value == "regresion"
    assert "did you mean 'regression'" in str(e)
    e = error(lambda d: d["method"].update(sampling="uniform"))
    assert e.field == "method.sampling" and e.value == "uniform"
    e = error(lambda d: d["method"]["tasks"][1].update(num_classes=3))
    assert e.field == "method.tasks[1].num_classes" and e.value == 3
    e = error(lambda d: d["method"]["tasks"].append({"name": "movie_score"}))
    assert e.field == "method.tasks" and "twice (movie_score)" in str(e)
    e = error(lambda d: d["method"].update(sampling_temperature=0))
    assert e.field == "method.sampling_temperature" and e.value == 0
    e = error(lambda d: d["teacher"].pop("finetune"))
    assert e.field == "teacher.finetune" and "tweet_sentiment" in str(e)
    e = error(lambda d: d["teacher"]["finetune"].update(seed=0))
    assert e.field == "teacher.finetune.seed" and "same model" in str(e)
    bucketed = copy.deepcopy(doc)  # the training batches of each task, cut
    bucketed["training"]["length_buckets"] = True
    assert config_from_dict(bucketed, file=path, plugin_manager=pm).training.length_buckets
    e = error(lambda d: d["method"].pop("tasks"))
    assert e.field == "method.tasks" and "required" in str(e)
    e = error(lambda d: d["data"].update(test_split=None))  # issue #17: test optional
    assert e.field == "method.tasks[0]" and "evaluates every task on its test split" in str(e)


# ----------------------------------------------------------- loss terms
def test_hard_loss_matches_numpy():
    cls = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0],
                    [0.0, 3.0, 0.0], [1.0, 2.0, 3.0]], "float32")
    reg = np.array([[0.2], [1.0], [-3.0], [0.5], [4.0]], "float32")
    task = np.array([0, 1, 0, 1, 0], "int32")
    # Regression targets (1.5, -0.5) would be invalid class ids: they must
    # not leak into the classification head; -1 marks a missing gold label.
    labels = np.array([2.0, 1.5, 0.0, -0.5, -1.0], "float32")
    present = np.array([1.0, 0.0, 1.0, 1.0, 1.0], "float32")
    student = {"logits/sst": cls, "logits/stsb": reg}
    batch = {"task": task, "labels": labels}

    def ce(z, y):
        return -np.log(softmax(z)[y])

    plain = [ce(cls[0], 2), (1.0 - 1.5) ** 2, ce(cls[2], 0), (0.5 + 0.5) ** 2, 0.0]
    got = MultiTaskHardLoss(TASKS)({}, student, batch)
    np.testing.assert_allclose(got, plain, rtol=1e-5)
    # With a teacher the hard loss keeps 1 - alpha of its weight.
    term = MultiTaskHardLoss(TASKS, alpha=0.5)
    assert term.required_teacher_taps() == {"present"}
    assert term.required_student_taps() == {"logits/sst", "logits/stsb"}
    got = term({"present": present}, student, batch)
    np.testing.assert_allclose(got, np.array(plain) * (1 - 0.5 * present), rtol=1e-5)


def test_soft_loss_matches_numpy():
    cls = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [2.0, 1.0, 0.0]], "float32")
    reg = np.array([[0.2], [1.0], [-3.0]], "float32")
    task = np.array([0, 1, 0], "int32")
    targets = np.array([[0.7, 0.2, 0.1], [0.4, 0.0, 0.0], [0.1, 0.1, 0.8]], "float32")
    present = np.array([1.0, 1.0, 0.0], "float32")  # task without a teacher: 0
    temp = 2.0
    term = MultiTaskSoftLoss(TASKS, temperature=temp, weight=0.5)
    assert term.required_teacher_taps() == {"targets", "present"}
    got = term({"targets": targets, "present": present},
               {"logits/sst": cls, "logits/stsb": reg},
               {"task": task, "labels": np.zeros(3, "float32")})
    q0 = np.log(softmax(cls[0] / temp))
    want = [-(targets[0] * q0).sum() * temp ** 2, (1.0 - 0.4) ** 2, 0.0]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_terms_give_gradient_only_to_each_examples_head():
    student = {"logits/sst": tf.Variable(np.ones((2, 3), "float32")),
               "logits/stsb": tf.Variable(np.ones((2, 1), "float32"))}
    batch = {"task": np.array([0, 0], "int32"), "labels": np.array([1.0, 7.0], "float32")}
    teacher = {"targets": np.full((2, 3), 1 / 3, "float32"), "present": np.ones(2, "float32")}
    with tf.GradientTape() as tape:
        loss = sum(tf.reduce_sum(t(teacher, student, batch)) for t in (
            MultiTaskHardLoss(TASKS, alpha=0.5), MultiTaskSoftLoss(TASKS)))
    g_cls, g_reg = tape.gradient(loss, [student["logits/sst"], student["logits/stsb"]])
    assert np.isfinite(g_cls.numpy()).all() and np.abs(g_cls.numpy()).sum() > 0
    np.testing.assert_array_equal(g_reg.numpy(), 0.0)  # no regression example


def test_terms_round_trip_their_config():
    for term in (MultiTaskHardLoss(TASKS, alpha=0.3), MultiTaskSoftLoss(TASKS, 2.0, 0.3)):
        again = type(term).from_config(term.get_config())
        assert again.tasks == term.tasks and again.name == term.name
    with pytest.raises(KdplugError, match="regression head has 1 output"):
        MultiTaskHardLoss([{"name": "r", "type": "regression", "num_outputs": 2}])


# ----------------------------------------------------- ensemble, metrics
def test_ensemble_averages_probabilities_and_predictions():
    z1 = np.array([[2.0, 0.0], [0.0, 1.0]])
    z2 = np.array([[0.0, 0.0], [3.0, 0.0]])
    avg = average_outputs([z1, z2], "classification")
    np.testing.assert_allclose(avg, (softmax(z1) + softmax(z2)) / 2, rtol=1e-6)
    # The average of probabilities, not the softmax of averaged logits.
    assert not np.allclose(avg, softmax((z1 + z2) / 2))
    np.testing.assert_allclose(
        average_outputs([z1, z2], "classification", temperature=4.0),
        (softmax(z1 / 4) + softmax(z2 / 4)) / 2, rtol=1e-6)
    np.testing.assert_allclose(
        average_outputs([np.array([[1.0], [2.0]]), np.array([[3.0], [-2.0]])],
                        "regression"), [[2.0], [0.0]])


def test_task_metrics():
    assert rank([3.0, 1.0, 3.0, 2.0]).tolist() == [3.5, 1.0, 3.5, 2.0]
    m = task_metrics("regression", np.array([[1.0], [2.0], [3.0], [5.0]]),
                     np.array([2.0, 4.0, 6.0, 7.0]))
    assert m["spearman"] == pytest.approx(1.0)
    assert m["pearson"] == pytest.approx(np.corrcoef([1, 2, 3, 5], [2, 4, 6, 7])[0, 1])
    m = task_metrics("classification", np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0]]),
                     np.array([0, 0, -1]))
    assert m == {"accuracy": 0.5, "examples": 2}


# -------------------------------------------------------------- sampling
def test_sampling_probabilities():
    np.testing.assert_allclose(sampling_probabilities([300, 100]), [0.75, 0.25])
    np.testing.assert_allclose(
        sampling_probabilities([900, 100], "temperature", 2.0), [0.75, 0.25])
    np.testing.assert_allclose(
        sampling_probabilities([900, 100], "temperature", 1.0), [0.9, 0.1])
    with pytest.raises(KdplugError):
        sampling_probabilities([10, 0])


def epochs_of(ds, n):
    return [np.array(list(ds.as_numpy_iterator())) for _ in range(n)]


def test_proportional_sampling_visits_every_batch_once_per_epoch():
    keras.utils.set_random_seed(0)
    ds, steps = task_choices([100, 30, 10], batch_size=10, seed=3)
    assert steps == 14 and int(ds.cardinality()) == 14
    first, second = epochs_of(ds, 2)
    for epoch in (first, second):
        assert np.bincount(epoch, minlength=3).tolist() == [10, 3, 1]
    assert first.tolist() != second.tolist()  # reshuffled every epoch
    keras.utils.set_random_seed(0)
    again, _ = task_choices([100, 30, 10], batch_size=10, seed=3)
    assert epochs_of(again, 1)[0].tolist() == first.tolist()  # fixed seed


def test_temperature_sampling_proportions():
    keras.utils.set_random_seed(0)
    sizes = [900, 100]  # T = 2: p = 3/4, 1/4 (proportional would be 9/10)
    ds, steps = task_choices(sizes, 1, "temperature", 2.0, seed=7)
    assert steps == 1000
    first, second = epochs_of(ds, 2)
    for epoch in (first, second):
        share = np.bincount(epoch, minlength=2) / steps
        np.testing.assert_allclose(share, [0.75, 0.25], atol=0.035)
    assert first.tolist() != second.tolist()
    keras.utils.set_random_seed(0)
    again, _ = task_choices(sizes, 1, "temperature", 2.0, seed=7)
    assert epochs_of(again, 1)[0].tolist() == first.tolist()


@pytest.mark.parametrize("mode", ["proportional", "temperature"])
def test_mixture_batches_come_from_one_task(mode):
    keras.utils.set_random_seed(0)
    sets = [tf.data.Dataset.from_tensor_slices(
        ({"task": np.full(n, i, "int32")}, np.arange(n, dtype="float32"))).batch(4)
        for i, n in enumerate([12, 5])]
    ds = mixture_dataset(sets, [12, 5], 4, mode, temperature=2.0, seed=1)
    assert int(ds.cardinality()) == 5
    seen = {0: [], 1: []}
    for x, y in ds:
        task = np.unique(x["task"].numpy())
        assert len(task) == 1
        seen[int(task[0])] += y.numpy().tolist()
    assert sum(len(v) for v in seen.values()) > 0
    if mode == "proportional":  # every example exactly once per epoch
        assert sorted(seen[0]) == list(range(12)) and sorted(seen[1]) == list(range(5))


def test_mixture_of_length_buckets_keeps_one_task_and_every_example_per_epoch():
    """`training.length_buckets` under MT-DNN: each task's batches are
    grouped by length and cut before the tasks are mixed."""
    keras.utils.set_random_seed(0)
    sizes, seq = [40, 13], 32
    sets = []
    for i, n in enumerate(sizes):
        x, _ = testing.toy_arrays(num_examples=n, sequence_length=seq, seed=i)
        x = dict(x, task=np.full(n, i, "int32"), example=np.arange(n, dtype="int32"))
        sets.append(LengthBuckets(window=4, multiple=8).batch(
            tf.data.Dataset.from_tensor_slices((x, np.zeros(n, "float32"))).shuffle(n),
            4, n, shuffle=True, seed=i))
    ds = mixture_dataset(sets, sizes, 4, seed=1)
    assert int(ds.cardinality()) == 10 + 4
    widths, seen = set(), {0: [], 1: []}
    for x, _ in ds:
        (task,) = np.unique(x["task"].numpy())
        width = x["token_ids"].shape[1]
        assert width % 8 == 0 and width <= seq
        assert x["padding_mask"].shape[1] == x["segment_ids"].shape[1] == width
        # cut to the longest sentence of the batch, rounded up to 8
        longest = int(x["padding_mask"].numpy().sum(axis=1).max())
        assert width == -(-longest // 8) * 8
        widths.add(width)
        seen[int(task)] += x["example"].numpy().tolist()
    assert len(widths) > 1  # the batches really were cut, to several widths
    assert sorted(seen[0]) == list(range(40)) and sorted(seen[1]) == list(range(13))


# --------------------------------------------------------------- student
def tiny_student():
    teacher = testing.tiny_bert_classifier(num_layers=2, seed=1)
    teacher.trainable = False
    encoder = truncated_bert(teacher, [1], num_classes=2, dropout=0.0)
    return MultiTaskStudent(encoder, TASKS, dropout=0.0)


def test_student_heads_taps_and_save_load_round_trip(tmp_path):
    student = tiny_student()
    assert not student.non_trainable_weights
    x, _ = testing.toy_batch(batch_size=4)
    out = student(x)
    assert set(out) == {"sst", "stsb"}
    assert tuple(out["sst"].shape) == (4, 3) and tuple(out["stsb"].shape) == (4, 1)
    taps = student.taps(x, ["logits", "logits/stsb", "hidden/1", "pooled"])
    np.testing.assert_allclose(
        taps["logits"], np.concatenate([out["sst"], out["stsb"]], -1), rtol=1e-5)
    assert student.tap_width("logits") == 4 and student.tap_width("logits/sst") == 3
    with pytest.raises(KdplugError, match="logits/<task>"):
        student.taps(x, ["logits/nope"])
    path = str(tmp_path / "student.keras")
    student.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, MultiTaskStudent) and loaded.tasks == student.tasks
    again = loaded(x)
    for name in ("sst", "stsb"):
        np.testing.assert_allclose(again[name], out[name], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_distiller_trains_the_multi_head_student():
    student = tiny_student()
    x, y = testing.toy_arrays(num_examples=32, seed=2)
    task = np.arange(32) % 2
    labels = np.where(task == 0, y, y * 2.0 - 1.0).astype("float32")
    targets = np.zeros((32, 3), "float32")
    targets[task == 0, :2] = np.eye(2)[y[task == 0]] * 0.8 + 0.1
    targets[task == 1, 0] = labels[task == 1]
    features = dict(x, task=task.astype("int32"), **{
        "teacher/targets": targets, "teacher/present": np.ones(32, "float32")})
    ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(8)
    terms = [MultiTaskHardLoss(student.tasks, alpha=0.5),
             MultiTaskSoftLoss(student.tasks, weight=0.5)]
    distiller = Distiller(student, None, terms)
    distiller.compile(optimizer=FusedAdamW(1e-2, weight_decay=0.0))
    history = distiller.fit(ds, epochs=10, verbose=0, shuffle=False).history
    # Soft cross-entropy is bounded below by the targets' entropy (~0.16 here).
    assert history["soft"][-1] < 0.7 * history["soft"][0], history["soft"]
    assert history["hard"][-1] < history["hard"][0], history["hard"]
    # Batches cut to their longest sentence (`training.length_buckets`,
    # window 1: the same batches) give the padded batches' losses.
    wide = dict(features, **{k: np.pad(x[k], ((0, 0), (0, 20))) for k in x})
    padded = tf.data.Dataset.from_tensor_slices((wide, labels))
    trimmed = LengthBuckets(window=1).batch(padded, 8, 32)
    assert [b[0]["token_ids"].shape[1] for b in trimmed] == [16] * 4  # from 32
    padded, cut = (distiller.evaluate(d, verbose=0, return_dict=True)
                   for d in (padded.batch(8), trimmed))
    for name in ("soft", "hard"):
        assert cut[name] == pytest.approx(padded[name], rel=1e-5), name


# ------------------------------------------------------------ end to end
# A regression task's teacher ensemble runs in the bench's smoke run
# (tests/bench/test_bench_mtdnn.py); here one task has teachers, so that
# the run fine-tunes two members, not four.
THREE_TASKS = [
    {"name": "toy_sentiment"},
    {"name": "toy_score", "type": "regression", "label_column": "score",
     "teacher": False},
    {"name": "other_sentiment", "path": "other.tsv", "teacher": False},
]


def toy_mtdnn_config(folder, tasks=THREE_TASKS, baselines=(), epochs=3,
                     ensemble_size=2, batch_size=16, shared=None, **method):
    """A tiny multi-task config: two toy TSVs (`toy.tsv`, `other.tsv`) and
    a 2-layer preset teacher that the fine-tuning makes confident (written
    beside them; `shared`: the `shared_teacher` fixture's preset and toy.tsv)."""
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    write_toy_tsv(os.path.join(folder, "other.tsv"), num_examples=120, seed=1)
    return write_toy_config(
        folder,
        {"name": "mtdnn-ensemble", "ensemble_size": ensemble_size,
         "baselines": list(baselines), "head_dropout": 0.0,
         "tasks": [dict(t) for t in tasks], **method},
        num_examples=160, export=False,
        training={"epochs": epochs, "learning_rate": 1e-2, "batch_size": batch_size},
        teacher={"finetune": {"epochs": 6, "batch_size": 16, "learning_rate": 1e-2},
                 **(shared["teacher"] if shared else {})},
        **({"data": shared["data"]} if shared else {}),
        student={"kind": "truncated", "layers": [1]},
    )


@pytest.fixture(scope="module")
def _shared_teacher(tmp_path_factory):
    return shared_toy_teacher(tmp_path_factory.mktemp("mtdnn-teacher"), num_examples=160)


@pytest.fixture
def shared_teacher(_shared_teacher, monkeypatch):
    """One toy teacher preset and one kdplug cache for this module's
    end-to-end runs, with the data file (conftest gives every test an empty
    cache): each task's teacher member is fine-tuned once here, and later
    runs load it, also the outputs cached for it. The
    re-run in `test_experiment_ensembles_teachers_and_resumes`
    still checks that a run finds its fine-tuned teachers and outputs."""
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(_shared_teacher["cache"]))
    return _shared_teacher


def run(path, **overrides):
    pm = plugin_manager()
    with open(path) as f:
        doc = yaml.safe_load(f)
    doc["method"].update(overrides)
    cfg = config_from_dict(doc, file=path, plugin_manager=pm)
    return Experiment(cfg, plugin_manager=pm).run()


@pytest.mark.slow
def test_experiment_ensembles_teachers_and_resumes(tmp_path, shared_teacher, kdplug_log):
    """The whole method in one run (each toy run costs about 20 s): two
    teachers for a task, a regression task, a task from a second file, a
    classification metric beyond the defaults, the students' batches in
    length buckets; then an identical re-run. (The baselines, padded
    batches and a regression task's teachers: tests/bench/test_bench_mtdnn.py's
    smoke run.)"""
    path = toy_mtdnn_config(tmp_path, shared=shared_teacher)
    with open(path) as f:
        doc = yaml.safe_load(f)
    doc["evaluation"] = {"metrics": ["accuracy", "f1_macro"]}
    # every variant keeps its best epoch (patience null: none stops early)
    doc["training"]["early_stopping"] = {"monitor": "val_loss", "patience": None}
    doc["training"]["length_buckets"] = {"window": 4}
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    report = run(path)
    assert any(m.startswith("length buckets: training batches sorted by length in "
                            "windows of 4") for m in kdplug_log())
    tasks = ["toy_sentiment", "toy_score", "other_sentiment"]
    assert list(report["tasks"]) == tasks
    probs = [t["sampling_probability"] for t in report["tasks"].values()]
    np.testing.assert_allclose(probs, np.array([112, 112, 84]) / 308)  # proportional
    assert set(report["teacher"]["tasks"]) == {"toy_sentiment"}
    members = report["teacher"]["tasks"]["toy_sentiment"]["members"]
    assert [m["seed"] for m in members] == [0, 1]
    # Different seeds: different fine-tuned weights, so different caches.
    assert len({m["teacher_output_cache"]["key"] for m in members}) == 2
    kd = report["variants"]["multi_task_kd"]
    assert set(kd["toy_sentiment"]) == {"accuracy", "f1_macro", "examples"}
    assert "f1_macro" in report["teacher"]["tasks"]["toy_sentiment"]["test_metrics"]
    assert report["teacher"]["tasks"]["toy_sentiment"]["test_metrics"]["accuracy"] > 0.6
    assert {"pearson", "spearman", "mse"} <= set(kd["toy_score"])
    assert kd["toy_sentiment"]["examples"] == 24 and kd["other_sentiment"]["examples"] == 18
    hist = report["history"]["multi_task_kd"]
    assert len(hist["soft"]) == 3
    assert hist["soft"][-1] < hist["soft"][0], hist["soft"]
    assert hist["hard"][-1] < hist["hard"][0], hist["hard"]
    assert hist["val_soft"] == [0.0] * 3  # teacher targets: training split only
    assert set(report["early_stopping"]) == set(report["history"])
    for name, best in report["early_stopping"].items():
        val_loss = report["history"][name]["val_loss"]
        assert best["epochs_run"] == 3
        assert best["best_epoch"] == 1 + int(np.argmin(val_loss)), (name, val_loss)
    run_dir = os.path.join(str(tmp_path), "runs", "toy")
    with open(os.path.join(run_dir, "metrics.json")) as f:
        saved = json.load(f)
    assert saved["student"]["tasks"] == kd
    assert saved["student"]["accuracy"] == pytest.approx(np.mean(
        [kd[name]["accuracy"] for name in ("toy_sentiment", "other_sentiment")]))
    summary = open(os.path.join(run_dir, "summary.md")).read()
    assert "| toy_score | Pearson / Spearman |" in summary
    student = keras.saving.load_model(os.path.join(run_dir, "student.keras"))
    assert student.task_names == tasks
    # A re-run reuses the fine-tuned teachers, their cached outputs and the
    # finished student.
    again = run(path)
    messages = kdplug_log()
    for member in again["teacher"]["tasks"]["toy_sentiment"]["members"]:
        assert member["finetune"]["cached"]
        assert member["teacher_output_cache"]["cached"]
    assert any("already finished" in m for m in messages)
    assert again["variants"] == report["variants"]


# ------------------------------------- checks before any teacher is fine-tuned

def _short_student(doc):
    """A student whose position embeddings (8) are below data.sequence_length (16)."""
    doc["student"] = {"kind": "narrow", "num_layers": 1, "hidden_dim": 8, "num_heads": 2,
                      "intermediate_dim": 16, "max_sequence_length": 8}


def _early_stopping_on_a_missing_variant(doc):
    doc["training"]["early_stopping"] = {"stages": ["multi_task_distil"]}


BEFORE_ENSEMBLES = [
    (_short_student, "data.sequence_length",
     "above the student's maximum sequence length 8 (got 16)"),
    (_early_stopping_on_a_missing_variant, "training.early_stopping.stages[0]",
     "no stage 'multi_task_distil'"),
]


@pytest.mark.slow
@pytest.mark.parametrize("change, field, message", BEFORE_ENSEMBLES,
                         ids=[change.__name__ for change, *_ in BEFORE_ENSEMBLES])
def test_what_validate_build_checks_stops_a_run_before_any_teacher_is_finetuned(
        change, field, message, tmp_path, monkeypatch, capsys):
    """`validate` passes; `validate --build` and `kdplug run` fail with the
    same error (the run used to fine-tune every ensemble member first, then
    fail, or ignore the early stopping), and no teacher is fine-tuned."""
    from kdplug.cli import main

    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "cache"))
    path = toy_mtdnn_config(tmp_path)
    with open(path) as f:
        doc = yaml.safe_load(f)
    change(doc)
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    assert main(["validate", path]) == 0
    capsys.readouterr()
    for command in (["validate", "--build", path], ["run", path]):
        assert main(command) == 2
        err = capsys.readouterr().err
        [line] = [line for line in err.splitlines() if line.startswith("kdplug: error:")]
        assert line.startswith(f"kdplug: error: {path}: {field}: ") and message in line
        assert "Traceback" not in err
    teachers = tmp_path / "cache" / "teachers"
    assert not teachers.exists() or not os.listdir(teachers)


@pytest.mark.slow
def test_validate_build_builds_the_student_and_every_variant(tmp_path, capsys):
    from kdplug.cli import main

    path = toy_mtdnn_config(tmp_path, baselines=["multi_task"])
    assert main(["validate", "--build", path]) == 0
    out = capsys.readouterr().out
    assert "stage multi_task: hard\nstage multi_task_kd: hard, soft\n" in out


# ------------------------------- the gold-only and the distilled variant differ
@pytest.mark.slow
def test_distilled_variant_is_its_own_model_and_the_soft_term_moves_its_heads(
        tmp_path, shared_teacher, monkeypatch):
    """The multi-task student trained on gold labels (`multi_task`) and the
    distilled one (`multi_task_kd`) start alike but are separate models: no
    variable of one is a variable of the other, and distillation changes
    the classification heads' test logits, on the task with teachers and,
    through the shared encoder, on the one without. The soft term reaches
    the head of a classification task with teachers: its training batches
    carry `present` 1 and the ensemble's probabilities (not one-hot), and
    its gradient on that head is non-zero. (bench/results/mtdnn.json shows
    both variants with equal test accuracies on both classification tasks:
    their stored weights differ there too, so only the counts tie.)"""
    from kdplug_plugins.mtdnn import multi_task_runner

    runner_class = multi_task_runner.MultiTaskRunner
    train, evaluate = runner_class._train, runner_class._evaluate
    students, logits, runners = {}, {}, []

    def keep_student(self, stages, index, name, tasks, kd, base):
        student, hist = train(self, stages, index, name, tasks, kd, base)
        students[name] = student
        runners.append(self)
        return student, hist

    def keep_logits(self, student, task):
        ds = self.encoder.dataset(task.splits["test"], 64)
        logits[student.name, task.name] = predict_outputs(
            student, ds, tap=f"logits/{task.name}")[0]
        return evaluate(self, student, task)

    monkeypatch.setattr(runner_class, "_train", keep_student)
    monkeypatch.setattr(runner_class, "_evaluate", keep_logits)
    path = toy_mtdnn_config(tmp_path, baselines=["multi_task"], epochs=2,
                            shared=shared_teacher)
    report = run(path)
    assert set(report["variants"]) == {"multi_task", "multi_task_kd"}
    gold, kd = students["multi_task"], students["multi_task_kd"]
    assert not {id(v) for v in gold.weights} & {id(v) for v in kd.weights}
    for task in ("toy_sentiment", "other_sentiment"):  # with / without teachers
        change = np.abs(logits[gold.name, task] - logits[kd.name, task]).max()
        assert change > 1e-3, (task, change)
    teacher_head = gold.task_names.index("toy_sentiment")
    assert not np.allclose(gold.heads[teacher_head].kernel.numpy(),
                           kd.heads[teacher_head].kernel.numpy())

    runner = runners[-1]
    ds = runner.dataset(runner.tasks, "train", True, shuffle=False)
    x, y = next(b for b in ds if int(b[0]["task"][0]) == teacher_head)
    present, targets = x["teacher/present"].numpy(), x["teacher/targets"].numpy()
    assert (present == 1.0).all()
    assert ((targets > 0.0) & (targets < 1.0)).any()  # soft, not the gold one-hot
    soft = [t for t in runner.method.terms(kd.tasks) if t.name == "soft"][0]
    head = kd.heads[teacher_head]
    with tf.GradientTape() as tape:
        taps = kd.taps(x, [f"logits/{n}" for n in kd.task_names])
        loss = tf.reduce_sum(soft({"targets": targets, "present": present}, taps,
                                  {"task": x["task"], "labels": y}))
    grads = tape.gradient(loss, [head.kernel] + [h.kernel for h in kd.heads if h is not head])
    assert grads[0] is not None and np.abs(grads[0].numpy()).max() > 0
    assert all(g is None or not np.abs(g.numpy()).any() for g in grads[1:])
