"""`StageRunner`'s files: a finished stage found by its weights file or by
the pointer a finished run leaves (`point_at`), one copy of the student."""

import json
import logging
import types

import numpy as np

from kdplug import testing
from kdplug.run.stage_runner import StageRunner


def context(run_dir, is_chief=True):
    (run_dir / "stages").mkdir(parents=True, exist_ok=True)
    return types.SimpleNamespace(
        run_dir=str(run_dir), is_chief=is_chief, log=logging.getLogger("kdplug.test"),
        path=lambda *parts: str(run_dir.joinpath(*parts)))


STAGE = types.SimpleNamespace(name="distill")


def test_point_at_keeps_one_copy_and_the_stage_loads_from_it(tmp_path):
    runner = StageRunner(context(tmp_path))
    assert runner.finished_weights(0, STAGE) is None
    student = testing.tiny_bert_classifier(seed=1)
    weights = tmp_path / "stages" / "01-distill.weights.h5"
    student.save_weights(str(weights))
    assert runner.finished_weights(0, STAGE) == str(weights)
    saved = tmp_path / "student.keras"
    student.save(str(saved))

    runner.point_at(0, STAGE, str(saved))
    assert not weights.exists()
    pointer = json.loads((tmp_path / "stages" / "01-distill.weights.json").read_text())
    assert pointer == {"file": "student.keras", "weights_of": "distill"}
    assert runner.finished_weights(0, STAGE) == str(saved)
    other = testing.tiny_bert_classifier(seed=2)
    other.load_weights(runner.finished_weights(0, STAGE))
    for a, b in zip(other.weights, student.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    runner.point_at(0, STAGE, str(saved))  # a re-run: nothing left to replace
    assert runner.finished_weights(0, STAGE) == str(saved)


def test_a_pointer_to_a_deleted_file_means_train_again(tmp_path, kdplug_log):
    runner = StageRunner(context(tmp_path))
    (tmp_path / "stages" / "01-distill.weights.json").write_text(
        json.dumps({"file": "student.keras", "weights_of": "distill"}))
    assert runner.finished_weights(0, STAGE) is None
    assert any("student.keras, which is gone; training it again" in line
               for line in kdplug_log())


def test_only_the_chief_replaces_the_weights(tmp_path):
    runner = StageRunner(context(tmp_path, is_chief=False))
    weights = tmp_path / "stages" / "01-distill.weights.h5"
    testing.tiny_bert_classifier().save_weights(str(weights))
    runner.point_at(0, STAGE, str(tmp_path / "student.keras"))
    assert weights.exists()
    assert not (tmp_path / "stages" / "01-distill.weights.json").exists()
