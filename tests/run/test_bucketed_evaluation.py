"""A run's evaluation with `training.length_buckets`: the test metrics read
the split in length buckets (`SingleTaskRunner.evaluate`) and report what
the padded pass reports, for the same weights; `kdplug predict` / `evaluate`
on a finished run read it the same way. The prediction passes themselves:
tests/evaluation/test_bucketed_predictions.py."""

import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import run_toy_config

from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.evaluation.measure import predict_outputs
from kdplug.run.context import RunContext
from kdplug.run.single_task import SingleTaskRunner

SEQ = 32
METRICS = ["accuracy", "f1_macro", "mcc"]


def evaluated(folder, buckets, teacher, student, test_ds, n):
    """`SingleTaskRunner.evaluate`'s report of a kd run with
    `training.length_buckets: buckets` (nothing trained, nothing read)."""
    config = config_from_dict({
        "name": "x", "data": {"path": "d.tsv", "sequence_length": SEQ},
        "teacher": {"source": "t.keras"}, "method": {"name": "kd"},
        "training": {"length_buckets": buckets, "jit_compile": False},
        "evaluation": {"latency_runs": 1, "metrics": METRICS}})
    os.makedirs(folder)
    context = RunContext.create(config, run_dir=str(folder))
    return SingleTaskRunner(context.method(), context).evaluate(teacher, student,
                                                                test_ds, n)


def test_evaluate_reports_the_padded_metrics_in_length_buckets(tmp_path):
    x, y = testing.toy_arrays(num_examples=45, sequence_length=SEQ, seed=6)
    test_ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    teacher = testing.tiny_bert_classifier(num_layers=2, max_sequence_length=SEQ)
    student = testing.tiny_bert_classifier(num_layers=1, max_sequence_length=SEQ,
                                           seed=1)
    padded = evaluated(tmp_path / "padded", False, teacher, student, test_ds, 45)
    bucketed = evaluated(tmp_path / "buckets", True, teacher, student, test_ds, 45)
    for role in ("teacher", "student"):
        for key in ("accuracy", "metrics", "collapse", "params"):
            assert bucketed[role][key] == padded[role][key], (role, key)
        assert set(bucketed[role]["latency_ms"]) == {"median", "min", "max"}


@pytest.mark.slow  # a toy run (about 20 s on 2 busy cores)
def test_a_run_in_length_buckets_reports_what_its_weights_give_padded(tmp_path):
    from kdplug.run.trained_run import ROLES
    from kdplug.run.trained_run import TrainedRun
    from kdplug.testing.toy_config import write_toy_config

    report, _, _ = run_toy_config(write_toy_config(
        tmp_path, {"name": "kd"}, training={"length_buckets": True}, export=False,
        evaluation={"metrics": METRICS}))
    run = TrainedRun(str(tmp_path / "runs" / "toy"), roles=ROLES)
    examples = run.read_split("test")
    dataset = run.dataset(examples, batch_size=8)  # batches of 8 and 16 tokens
    lengths = np.concatenate([x["padding_mask"].numpy().sum(1) for x, _ in dataset])
    assert lengths.min() <= 8 < lengths.max()
    assert run.models.length_buckets().multiple == 8
    by_length = run.evaluate(examples, batch_size=8)  # the run's buckets
    for role in ROLES:
        padded, labels = predict_outputs(run.model(role), dataset)
        bucketed, same = run.outputs(role, dataset)
        np.testing.assert_allclose(bucketed, padded, rtol=0, atol=1e-5)
        np.testing.assert_array_equal(same, labels)
        values = run.task.metrics(METRICS, padded, labels)
        # the run's report (bucketed, in the run) = these weights read padded
        assert by_length[role] == values
        assert report[role]["accuracy"] == values["accuracy"]
        assert report[role]["metrics"] == {k: values[k] for k in report[role]["metrics"]}
    records = run.predict(examples.texts[:5])
    assert [r["label"] for r in records] == np.argmax(padded[:5], -1).tolist()
