"""A run with `training.length_buckets`: Keras' validation pass of every
stage and of the teacher's fine-tuning reads the validation split in length
buckets (`dataset_by_length`), and what it logs (`val_loss`, `val_<term>`,
`val_accuracy`) is what the same weights give on the padded split. The
passes themselves: tests/training/test_bucketed_validation.py."""

import numpy as np
import pytest
from conftest import run_toy_config

import kdplug
from kdplug.run.stage_runner import StageRunner
from kdplug.run.stage_runner import fit_validation
from kdplug.teacher import finetune
from kdplug.teacher.finetune import TeacherFinetuner
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import MaskedLMLoss
from kdplug.testing.toy_config import write_toy_config


def widths(dataset):
    return [x["token_ids"].shape[1] for x, _ in dataset]


def test_a_stage_validates_in_buckets_unless_it_masks_its_inputs():
    padded, by_length = object(), object()
    kd = kdplug.Stage("kd", [HardLabelCrossEntropy()])
    assert fit_validation(kd, padded, by_length) is by_length
    assert fit_validation(kd, padded, None) is padded  # no buckets
    assert fit_validation(kd, None, None) is None  # no validation split
    # validation masks are drawn per batch: other batches, other masks
    mlm = kdplug.Stage("mlm", [MaskedLMLoss("hidden/1", vocabulary_size=64, hidden_dim=16)])
    assert fit_validation(mlm, padded, by_length) is padded


@pytest.mark.slow  # a toy run of 960 examples (10 s alone, 30 s on 2 busy cores)
def test_a_run_validates_in_length_buckets_as_padded(tmp_path, monkeypatch):
    seen = {"by_length": [], "stage": [], "teacher": []}
    by_length = finetune.dataset_by_length

    def recording_by_length(dataset, buckets):
        out = by_length(dataset, buckets)
        seen["by_length"].append(widths(out))
        return out

    fit_teacher = TeacherFinetuner._fit

    def teacher_fit(self, teacher, train_ds, val_ds, best, backup, length_buckets=None):
        history = fit_teacher(self, teacher, train_ds, val_ds, best, backup, length_buckets)
        assert widths(val_ds) == [16] * len(widths(val_ds))  # the callbacks': padded
        seen["teacher"].append((history.history,
                                teacher.evaluate(val_ds, verbose=0, return_dict=True)))
        return history

    run_stage, fit_stage = StageRunner.run, StageRunner._fit
    padded = {}

    def stage_run(self, index, stage, student, teacher, train_ds, val_ds, **kwargs):
        padded["val_ds"] = val_ds
        return run_stage(self, index, stage, student, teacher, train_ds, val_ds, **kwargs)

    def stage_fit(self, distiller, train_ds, val_ds, *args):
        fit_stage(self, distiller, train_ds, val_ds, *args)
        seen["stage"].append((widths(val_ds), distiller.evaluate(
            padded["val_ds"], verbose=0, return_dict=True)))

    monkeypatch.setattr(finetune, "dataset_by_length", recording_by_length)
    monkeypatch.setattr(TeacherFinetuner, "_fit", teacher_fit)
    monkeypatch.setattr(StageRunner, "run", stage_run)
    monkeypatch.setattr(StageRunner, "_fit", stage_fit)
    # 144 validation examples: batches of 64, 64 and 16, of 5 to 13 tokens
    report, _, _ = run_toy_config(write_toy_config(
        tmp_path, {"name": "kd"}, num_examples=960, export=False,
        training={"length_buckets": {"multiple": 4}},
        teacher={"finetune": {"epochs": 1, "batch_size": 16, "learning_rate": 3e-3,
                              "early_stopping": {"monitor": "val_loss"}}}))

    # the teacher's fine-tuning: validated in buckets, as padded
    [teacher_widths] = seen["by_length"]
    assert len(teacher_widths) == 3 and min(teacher_widths) < 16
    assert all(w % 4 == 0 for w in teacher_widths)
    [(history, plain)] = seen["teacher"]
    assert set(plain) == {"loss", "accuracy"}
    for name, value in plain.items():
        np.testing.assert_allclose(history[f"val_{name}"][-1], value, rtol=1e-5)
    info = report["teacher"]["finetune"]
    assert info["validation_accuracy"] == pytest.approx(plain["accuracy"], rel=1e-6)

    # the student's stage: validated in buckets, as padded
    [(stage_widths, plain)] = seen["stage"]
    assert stage_widths == teacher_widths  # the same split, the same batches
    [epochs] = report["history"].values()
    assert {f"val_{name}" for name in plain} <= set(epochs)
    assert "val_accuracy" in epochs
    for name, value in plain.items():
        np.testing.assert_allclose(epochs[f"val_{name}"][-1], value, rtol=1e-5,
                                   err_msg=name)
