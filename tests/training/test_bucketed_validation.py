"""Keras' validation pass in length buckets (`training.length_buckets`):
`dataset_by_length` gives a padded split's examples again in batches of
similar length, and a `Distiller` (in `fit` and in the custom loop) and a
teacher compiled for its fine-tuning report the padded batches' `val_*`
values on them, since every value is a per-example mean. A run's own
passes: tests/run/test_bucketed_validation_run.py."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import testing
from kdplug.data.length_buckets import LengthBuckets
from kdplug.data.length_buckets import dataset_by_length
from kdplug.errors import KdplugError
from kdplug.teacher.objectives import ClassificationObjective
from kdplug.teacher.objectives import RegressionObjective
from kdplug.terms import CosineHidden
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training.custom_loop import CustomLoopTrainer
from kdplug.training.distiller import Distiller

SEQ = 32
N, BATCH = 45, 16  # batches of 16, 16 and 13


def padded(seed=6, labels=None):
    """A padded toy split of `N` examples of 4 to `SEQ` tokens."""
    x, y = testing.toy_arrays(num_examples=N, sequence_length=SEQ, seed=seed)
    return tf.data.Dataset.from_tensor_slices((x, y if labels is None else labels)).batch(
        BATCH)


def assert_same_values(bucketed, plain):
    assert set(bucketed) == set(plain)
    for name, value in plain.items():
        np.testing.assert_allclose(bucketed[name], value, rtol=1e-5, atol=1e-7,
                                   err_msg=name)


def test_dataset_by_length_holds_the_examples_sorted_and_cut():
    ds = padded()
    by_length = dataset_by_length(ds, LengthBuckets(window=16, multiple=8))
    assert int(by_length.cardinality()) == 3
    batches = list(by_length)
    assert [len(y) for _, y in batches] == [16, 16, 13]  # the padded sizes
    widths = [x["token_ids"].shape[1] for x, _ in batches]
    assert all(w % 8 == 0 for w in widths) and min(widths) < SEQ
    lengths = [x["padding_mask"].numpy().sum(1) for x, _ in batches]
    assert all(a.max() <= b.min() for a, b in zip(lengths, lengths[1:]))  # short to long
    assert all(length.max() > w - 8 for length, w in zip(lengths, widths))  # cut to it

    def rows(dataset):
        """Every example as `(token ids padded to SEQ, label)`, sorted."""
        out = []
        for x, y in dataset:
            ids = np.pad(x["token_ids"].numpy(), [(0, 0), (0, SEQ - x["token_ids"].shape[1])])
            out += [(tuple(i), int(label)) for i, label in zip(ids, y.numpy())]
        return sorted(out)

    assert rows(by_length) == rows(ds)
    with pytest.raises(KdplugError, match="already cut"):
        dataset_by_length(by_length, LengthBuckets())


def distiller():
    """A tiny teacher and student with a per-example, a label and a
    per-token term, compiled with accuracy."""
    teacher = testing.tiny_bert_classifier(num_layers=2, max_sequence_length=SEQ, seed=1)
    student = testing.tiny_bert_classifier(num_layers=2, max_sequence_length=SEQ, seed=2)
    out = Distiller(student, teacher, [
        SoftTargetCrossEntropy(2.0, weight=0.5), HardLabelCrossEntropy(weight=0.5),
        CosineHidden([("hidden/1", "hidden/1")], weight=0.1)])
    out.compile(optimizer="adam", jit_compile=False,
                metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    return out


def test_a_distiller_reports_the_padded_validation_in_length_buckets():
    ds, model = padded(), distiller()
    plain = model.evaluate(ds, verbose=0, return_dict=True)
    assert set(plain) == {"loss", "soft_ce", "hard_ce", "cosine_hidden", "accuracy"}
    by_length = dataset_by_length(ds, LengthBuckets(multiple=8))
    assert_same_values(model.evaluate(by_length, verbose=0, return_dict=True), plain)


def test_the_custom_loop_reports_the_padded_validation_in_length_buckets():
    # its validation pass (several local replicas with XLA, multi-worker)
    ds, loop = padded(), CustomLoopTrainer(distiller())
    plain = loop.evaluate(ds)
    assert set(plain) == {"loss", "soft_ce", "hard_ce", "cosine_hidden", "accuracy"}
    assert_same_values(loop.evaluate(dataset_by_length(ds, LengthBuckets(multiple=8))),
                       plain)


@pytest.mark.parametrize("objective", [ClassificationObjective(), RegressionObjective()],
                         ids=["classification", "regression"])
def test_a_teacher_reports_the_padded_validation_in_length_buckets(objective):
    regression = objective.name == "regression"
    teacher = testing.tiny_bert_classifier(num_classes=1 if regression else 2,
                                           max_sequence_length=SEQ, seed=1)
    # the fine-tuning's compile (`TeacherFinetuner._compile`)
    teacher.compile(optimizer="adam", loss=objective.loss(), jit_compile=False,
                    metrics=objective.metrics() or None)
    labels = None
    if regression:
        labels = np.random.default_rng(0).normal(size=(N, 1)).astype("float32")
    ds = padded(labels=labels)
    plain = teacher.evaluate(ds, verbose=0, return_dict=True)
    assert set(plain) == ({"loss"} if regression else {"loss", "accuracy"})
    bucketed = teacher.evaluate(dataset_by_length(ds, LengthBuckets(multiple=8)),
                                verbose=0, return_dict=True)
    assert_same_values(bucketed, plain)
