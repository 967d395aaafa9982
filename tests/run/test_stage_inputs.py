"""A stage with inputs of its own (`Stage.own_inputs`): TinyBERT's general
distillation reads a corpus of its own through the *pre-trained* teacher,
with teacher outputs cached for that stage alone."""

import keras
import numpy as np
import pytest

from kdplug import keys
from kdplug import testing
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.run.context import RunContext
from kdplug.run.experiment import Experiment
from kdplug.run.run_folder import run_settings
from kdplug.run.single_task import SingleTaskRunner
from kdplug.run.single_task import build_stages
from kdplug.run.teacher_setup import TeacherSetup
from kdplug.storage import fingerprint
from kdplug.testing.toy_config import write_toy_config

TAP = "hidden/2"  # the 2-layer teacher's layer the 1-layer student learns


def corpus_config(tmp_path, texts=24, **method):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(testing.toy_sentences(texts, seed=7)[0]) + "\n")
    path = write_toy_config(
        tmp_path, {"name": "tinybert", "stages": ["general", "task_prediction"],
                   "general_corpus": "corpus.txt", **method},
        num_examples=80, export=False, student={"kind": "truncated", "layers": [1]},
        cache={"teacher_outputs": True})
    return path, str(corpus)


def backbone_weights(model):
    return [np.asarray(w) for w in model.backbone.get_weights()]


@pytest.mark.slow
def test_the_general_stage_reads_its_corpus_through_the_pretrained_teacher(tmp_path):
    path, corpus = corpus_config(tmp_path)
    config = load_config(path)
    context = RunContext.create(config)
    runner = SingleTaskRunner(context.method(), context)
    splits = runner.read_splits()
    teacher, tokenizer, finetuned = runner.prepare_teacher(splits)
    assert finetuned is not None
    student, stages = build_stages(runner.method, teacher, context.student_kind(), config)
    general, prediction = stages
    assert TAP in general.terms[1].required_teacher_taps()
    assert general.own_inputs and not prediction.own_inputs
    encoder = TeacherSetup(context).encoder(tokenizer)

    pretrained, train_ds, info = runner.stage_inputs(
        general, encoder, None, splits["train"], None, teacher)
    assert info["teacher"] == "pretrained"
    assert (info["examples"], info["source"]) == (24, corpus)
    assert info["teacher_output_cache"]["computed"] == [0]
    # the teacher as its preset gives it: not the fine-tuned one
    fresh, _, _ = TeacherSetup(context).load(2)
    for a, b in zip(backbone_weights(pretrained), backbone_weights(fresh)):
        np.testing.assert_array_equal(a, b)
    assert any(not np.allclose(a, b) for a, b in
               zip(backbone_weights(pretrained), backbone_weights(teacher)))
    # every batch: corpus texts, no labels, the pre-trained teacher's taps
    seen = 0
    for features, labels in train_ds:
        np.testing.assert_array_equal(labels, -1)
        x = {k: v for k, v in features.items() if not keys.is_teacher_key(k)}
        cached = np.asarray(features[keys.teacher_key(TAP)], "float32")
        mask = np.asarray(x["padding_mask"])[..., None]
        want = keras.ops.convert_to_numpy(pretrained.taps(x, [TAP])[TAP])
        other = keras.ops.convert_to_numpy(teacher.taps(x, [TAP])[TAP])
        np.testing.assert_allclose(cached * mask, want * mask, atol=2e-2, rtol=1e-2)
        assert np.abs(cached * mask - other * mask).max() > 0.1
        seen += len(labels)
    assert seen == 24
    # asked again, the same teacher object (loaded once per run)
    assert runner.stage_inputs(general, encoder, None, splits["train"], None,
                               teacher)[0] is pretrained


@pytest.mark.slow
def test_a_run_reports_the_stage_inputs_and_trains_the_general_stage(tmp_path):
    path, corpus = corpus_config(tmp_path, stages=["general"], general_epochs=4,
                                 general_learning_rate=1e-3)
    report = Experiment(load_config(path)).run()
    assert report["stage_inputs"]["general"]["examples"] == 24
    assert report["stage_inputs"]["general"]["teacher"] == "pretrained"
    losses = report["history"]["general"]["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_the_corpus_content_is_part_of_the_run_settings(tmp_path):
    path, corpus = corpus_config(tmp_path)
    before = fingerprint(run_settings(load_config(path)))
    assert run_settings(load_config(path))["input_file_content"]["method.general_corpus"]
    with open(corpus, "a") as f:
        f.write("one more sentence\n")
    assert fingerprint(run_settings(load_config(path))) != before


def test_a_stage_on_the_pretrained_teacher_never_reads_its_logits(tmp_path):
    from kdplug.plugin.method import Stage
    from kdplug.teacher.loading import check_teacher_serves
    from kdplug.terms import SoftTargetCrossEntropy

    path, _ = corpus_config(tmp_path)
    config = load_config(path)
    teacher = testing.tiny_bert_classifier()
    stage = Stage("general", [SoftTargetCrossEntropy()], teacher="pretrained")
    with pytest.raises(ConfigError, match=r"general/soft_ce read the logits of the "
                       r"pre-trained teacher.*untrained"):
        check_teacher_serves(teacher, config, [stage])
    with pytest.raises(ValueError, match="teacher must be one of finetuned, pretrained"):
        Stage("general", [], teacher="general")
