import os
import types

import numpy as np
import pytest

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.data.masking import stage_dataset
from kdplug.errors import ConfigError
from kdplug.terms import MaskedLMLoss
from kdplug.training import FusedAdamW
from kdplug_plugins.distilbert.distilbert_method import DistilBertMethod
from kdplug_plugins.students.truncated import TruncatedStudent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# toy data: [PAD] = 0, [CLS] = 2, ordinary tokens 4..63
TOKENIZER = types.SimpleNamespace(
    vocabulary_size=lambda: testing.VOCAB_SIZE, mask_token_id=3, cls_token_id=2,
    sep_token_id=1, pad_token_id=0,
)


def build(mode="general_then_task", teacher_layers=4, **options):
    teacher = testing.tiny_bert_classifier(num_layers=teacher_layers, seed=1)
    method = DistilBertMethod(DistilBertMethod.Config(mode=mode, **options))
    kind = TruncatedStudent(TruncatedStudent.Config(layers="every_other", dropout=0.0))
    student = method.build_student(teacher, kind, num_classes=2)
    return method, teacher, student


def fit(stage, student, teacher, epochs):
    distiller = Distiller(student, teacher, stage.terms)
    distiller.compile(optimizer=FusedAdamW(3e-3, weight_decay=0.0), jit_compile=False)
    # Building the optimizer before fit() saves a second trace of the step.
    distiller.optimizer.build(distiller.trainable_variables)
    # Static masks (training=False): the toy tokens are uniformly random, so
    # fresh masks every epoch leave MLM nothing to learn beyond the unigram
    # distribution; with fixed masks the decrease is clear.
    ds = stage_dataset(testing.toy_dataset(num_examples=32, batch_size=8), stage,
                       TOKENIZER, seed=0, training=False)
    history = distiller.fit(ds, epochs=epochs, verbose=0, shuffle=False).history
    return distiller, history


def test_modes_and_terms():
    method, teacher, student = build(hard_weight=0.5)
    general, task = method.stages(teacher, student)
    assert (general.name, general.data, task.name, task.data) == (
        "general", "unlabelled", "task", "task")
    # the paper distils the pre-trained teacher; the task stage the fine-tuned one
    assert (general.teacher, task.teacher) == ("pretrained", "finetuned")
    assert [t.name for t in general.terms] == ["mlm", "cosine_hidden"]
    assert [t.name for t in task.terms] == ["soft_ce", "cosine_hidden", "hard_ce"]
    # cosine between the last hidden states: teacher layer 4, student layer 2
    assert general.terms[1].pairs == (("hidden/4", "hidden/2"),)
    assert task.terms[1].pairs == (("hidden/4", "hidden/2"),)
    assert general.terms[0].hidden_tap == "hidden/2"
    assert [float(t.weight.numpy()) for t in task.terms] == [5.0, 1.0, 0.5]
    assert float(task.terms[0].temperature.numpy()) == 2.0
    # defaults: task mode only, no hard CE
    method = DistilBertMethod()
    (only,) = method.stages(teacher, student)
    assert [t.name for t in only.terms] == ["soft_ce", "cosine_hidden"]
    method = DistilBertMethod(DistilBertMethod.Config(mode="general", cosine_weight=0.0))
    (only,) = method.stages(teacher, student)
    assert [t.name for t in only.terms] == ["mlm"]


@pytest.mark.slow
def test_general_then_task_trains_and_keeps_the_head_out_of_the_student():
    # 3 teacher layers -> every_other: the student starts as teacher layers 0, 2
    method, teacher, student = build(teacher_layers=3, hard_weight=1.0,
                                     max_predictions=2)
    assert student.num_layers == 2
    for s_layer, t_index in zip(student.backbone.transformer_layers, [0, 2]):
        for a, b in zip(s_layer.get_weights(),
                        teacher.backbone.transformer_layers[t_index].get_weights()):
            np.testing.assert_array_equal(a, b)
    student_weights = [w.path for w in student.weights]
    general, task = method.stages(teacher, student)
    assert general.terms[1].pairs == (("hidden/3", "hidden/2"),)
    mlm = general.terms[0]
    assert isinstance(mlm, MaskedLMLoss)
    head_before = [w.numpy().copy() for w in mlm.head.trainable_weights]

    distiller, history = fit(general, student, teacher, epochs=5)
    for name in ("loss", "mlm", "cosine_hidden"):
        assert np.isfinite(history[name]).all(), name
    # (the student starts from teacher layers, so the cosine term starts
    # near 0 and the MLM term dominates what is learnt)
    assert history["loss"][-1] < history["loss"][0]
    assert history["mlm"][-1] < history["mlm"][0]
    # The head trains with the student but belongs to the term, not the student.
    trained = {id(w) for w in distiller.trainable_variables}
    assert all(id(w) in trained for w in mlm.head.trainable_weights)
    assert any(not np.allclose(a, w.numpy())
               for a, w in zip(head_before, mlm.head.trainable_weights))
    assert [w.path for w in student.weights] == student_weights
    assert not any("mlm" in p for p in student_weights)

    _, history = fit(task, student, teacher, epochs=3)
    for name in ("loss", "soft_ce", "cosine_hidden", "hard_ce"):
        assert np.isfinite(history[name]).all(), name
    assert history["loss"][-1] < history["loss"][0]


def test_config_validates():
    config = load_config(os.path.join(ROOT, "configs", "distilbert.yaml"))
    assert config.method.name == "distilbert"
    assert config.method_config.mode == "general_then_task"
    assert config.student_config.layers == "every_other"
    assert config.student_config.init == "pretrained"
    assert (config.method_config.temperature, config.method_config.soft_weight,
            config.method_config.mlm_weight, config.method_config.cosine_weight) == (
        2.0, 5.0, 2.0, 1.0)  # the paper's T, alpha_ce, alpha_mlm, alpha_cos
    # the general stage: the pre-trained teacher on the shipped general corpus
    assert config.method_config.general_teacher == "pretrained"
    assert config.input_files == {
        "method.general_corpus": os.path.join(ROOT, "data", "general_english.txt")}
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}
    # the paper's recipe by default: one layer out of two of the pre-trained
    # teacher, a new head; `init: teacher` keeps the fine-tuned teacher's
    config = config_from_dict({**base, "method": {"name": "distilbert"}})
    assert (config.student.name, config.student_config.layers,
            config.student_config.init) == ("truncated", "every_other", "pretrained")
    config = config_from_dict({**base, "method": {"name": "distilbert"},
                               "student": {"init": "teacher"}})
    assert (config.student_config.layers, config.student_config.init) == (
        "every_other", "teacher")
    with pytest.raises(ConfigError, match="method.mode"):
        config_from_dict({**base, "method": {"name": "distilbert", "mode": "pretrain"}})
    with pytest.raises(ConfigError, match="mask_rate"):
        config_from_dict({**base, "method": {"name": "distilbert", "mask_rate": 0.0}})


def test_default_student_starts_from_the_pre_trained_teacher():
    """Sanh et al.: "we initialize the student from the teacher by taking one
    layer out of two" of pre-trained BERT; the task head is new."""
    from kdplug.plugin.student_kind import PretrainedWeights

    teacher = testing.tiny_bert_classifier(num_layers=4, seed=1)
    pretrained = PretrainedWeights(teacher)
    for w in teacher.weights:  # a stand-in fine-tuning, in place
        w.assign(w.numpy() * 2.0 + 1.0)
    teacher.trainable = False
    method = DistilBertMethod()
    kind = TruncatedStudent(TruncatedStudent.Config(
        **{k: v for k, v in method.default_student.items() if k != "kind"}))
    assert kind.config.init == "pretrained" and kind.needs_pretrained_weights
    kind.pretrained_weights = pretrained
    student = method.build_student(teacher, kind, num_classes=2)
    for j, index in enumerate([0, 2]):
        t_layer = teacher.backbone.transformer_layers[index]
        for a, pre, tuned in zip(student.backbone.transformer_layers[j].get_weights(),
                                 pretrained.get_weights(t_layer), t_layer.get_weights()):
            np.testing.assert_array_equal(a, pre)
            np.testing.assert_array_equal(a * 2.0 + 1.0, tuned)
    head = student.classifier.get_weights()
    np.testing.assert_array_equal(head[1], np.zeros(2))  # fresh: zero bias
    assert np.abs(head[0] - teacher.classifier.get_weights()[0]).max() > 1e-3
    assert np.abs(head[0] - pretrained.get_weights(teacher.classifier)[0]).max() > 1e-3
    assert not student.non_trainable_weights
