"""Teachers of other keras-hub families through `kdplug run` (issue #16): an
ELECTRA backbone fine-tuned and distilled into an ELECTRA student, a user's
fine-tuned keras-hub DistilBERT classifier used as it is (its head kept: the
run's teacher accuracy is keras-hub's own), and the errors for an untrained
head and a tap the family lacks."""

import keras
import keras_hub
import numpy as np
import pytest

from kdplug.cli import main
from kdplug.config import load_config
from kdplug.data import read_splits
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.models import HubTextClassifier
from kdplug.run.experiment import Experiment
from kdplug.testing import families
from kdplug.testing.toy_config import write_toy_config


def toy_config(folder, source, method=None, **sections):
    """A toy run of `method` (default kd) on the teacher at `source` with a
    1-layer truncated student; byte-level BPE and SentencePiece split the
    toy words into several pieces, so sentences get 32 of them."""
    return write_toy_config(
        folder, method or {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        teacher={"source": str(source), **sections.pop("teacher", {})},
        data={"sequence_length": 32},
        training={"epochs": 3, "learning_rate": 3e-3, **sections.pop("training", {})},
        student={"kind": "truncated", "layers": [1]}, export=False, **sections)


@pytest.mark.slow
def test_electra_teacher_fine_tuned_and_distilled(tmp_path):
    source = families.write_tiny_preset("electra", tmp_path / "electra")
    path = toy_config(tmp_path, source, teacher={"finetune": {
        "epochs": 1, "batch_size": 16, "learning_rate": 3e-3}}, training={"epochs": 2})
    report = Experiment(load_config(path)).run()
    # (whether tiny models of each family learn: test_methods_on_families.py)
    loss = report["history"]["distill"]["loss"]
    assert loss[-1] < loss[0]
    student = keras.saving.load_model(tmp_path / "runs" / "toy" / "student.keras")
    assert isinstance(student, HubTextClassifier)
    assert type(student.backbone).__name__ == "ElectraBackbone"
    assert student.num_layers == 1


@pytest.mark.slow
def test_a_keras_hub_classifier_preset_is_used_as_it_is(tmp_path):
    """A user's keras-hub classifier saved with `save_to_preset` (its head
    set by hand here, as fine-tuning would: tiny models learn the toy task
    too slowly for a unit test): with no `teacher.finetune` the run keeps
    the head, and the teacher accuracy it reports is the one keras-hub
    measures on the same test texts."""
    folder = families.write_tiny_preset("distil_bert", tmp_path / "user",
                                        classifier=True)
    path = toy_config(tmp_path, folder, teacher={"finetune": None},
                      training={"epochs": 1})
    config = load_config(path)
    task = keras_hub.models.TextClassifier.from_preset(folder)
    test = read_splits(config.data, config.resolve_path, seed=config.seed)["test"]
    # a head that splits the test texts: along their pooled vectors' first
    # principal direction, cut at the median
    x = task.preprocessor(list(test.texts))
    pooled = np.asarray(task.pooled_dense(task.backbone(x)[:, 0]))
    direction = np.linalg.svd(pooled - pooled.mean(0))[2][0]
    cut = np.median(pooled @ direction)
    task.output_dense.set_weights([np.stack([direction, -direction], 1) * 50,
                                   np.array([-cut, cut]) * 50])
    task.save_to_preset(str(folder))
    predicted = np.argmax(task.predict(list(test.texts), verbose=0), -1)
    assert 0 < predicted.mean() < 1  # both classes: not a constant head
    expected = np.mean(predicted == np.asarray(test.labels))
    report = Experiment(config).run()
    assert report["teacher"]["accuracy"] == pytest.approx(expected, abs=1e-6)


def test_an_untrained_head_without_finetune_is_refused(tmp_path, capsys):
    source = families.write_tiny_preset("albert", tmp_path / "albert")
    path = toy_config(tmp_path, source, teacher={"finetune": None})
    # `kdplug validate --build` says it before any run
    assert main(["validate", "--build", path]) == 2
    assert "add `teacher: {finetune" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"teacher.finetune.*untrained classification "
                                          r"head.*distill/.*add `teacher: \{finetune"):
        Experiment(load_config(path)).run()


def test_a_tap_the_teachers_family_lacks_is_named(tmp_path, capsys):
    source = families.write_tiny_preset("deberta_v3", tmp_path / "deberta")
    path = toy_config(tmp_path, source, method={"name": "tinybert",
                                                "stages": ["task_intermediate"]},
                      teacher={"finetune": None})
    assert main(["validate", path]) == 0  # the inputs alone are fine
    assert main(["validate", "--build", path]) == 2
    err = capsys.readouterr().err
    assert "attention_scores/" in err and "(keras-hub family deberta_v3) has no" in err
    with pytest.raises(KdplugError, match=r"teacher tap 'attention_scores/\d'.*"
                                          r"\(keras-hub family deberta_v3\) has no "
                                          "attention"):
        Experiment(load_config(path)).run()
