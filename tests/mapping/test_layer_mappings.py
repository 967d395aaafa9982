import dataclasses

import pytest

from kdplug import mapping
from kdplug import testing
from kdplug.config.schema import parse
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.models import BiLstmClassifier
from kdplug.plugin.manager import PluginManager


@pytest.fixture(scope="module")
def teacher():
    return testing.tiny_bert_classifier(num_layers=4, seed=9)


@pytest.fixture(scope="module")
def student():
    return testing.tiny_bert_classifier(num_layers=2, seed=10)


def test_registered_through_the_plugin_hook():
    pm = PluginManager()
    assert pm.mappings.names() == ["custom", "last", "skip", "uniform"]
    assert pm.mappings.source("uniform") == "kdplug"
    for name in pm.mappings.names():
        cls = pm.mappings.get(name)
        assert issubclass(cls, mapping.LayerMapping) and cls.name == name
        assert dataclasses.is_dataclass(cls.Config) and cls.description


def test_uniform_is_tinybert_g_of_m():
    uniform = mapping.UniformMapping()
    assert uniform.layer_pairs(6, 3) == [(2, 1), (4, 2), (6, 3)]
    assert uniform.layer_pairs(12, 4) == [(3, 1), (6, 2), (9, 3), (12, 4)]
    assert uniform.layer_pairs(6, 4) == [(1, 1), (3, 2), (4, 3), (6, 4)]  # floor
    with_emb = mapping.UniformMapping(mapping.UniformMapping.Config(include_embeddings=True))
    assert with_emb.layer_pairs(6, 3) == [(0, 0), (2, 1), (4, 2), (6, 3)]
    assert uniform.describe(6, 3) == "uniform: T2->S1, T4->S2, T6->S3"


def test_pkd_skip_and_last():
    assert mapping.SkipMapping().layer_pairs(12, 6) == [(2, 1), (4, 2), (6, 3), (8, 4), (10, 5)]
    assert mapping.SkipMapping().layer_pairs(6, 3) == [(2, 1), (4, 2)]
    every3 = mapping.SkipMapping(mapping.SkipMapping.Config(every=3, include_last=True))
    assert every3.layer_pairs(12, 4) == [(3, 1), (6, 2), (9, 3), (12, 4)]
    too_far = mapping.SkipMapping(mapping.SkipMapping.Config(every=4, include_last=True))
    with pytest.raises(KdplugError, match=r"teacher layers \[8\]"):
        too_far.layer_pairs(6, 2)
    assert mapping.LastMapping().layer_pairs(12, 6) == [(7, 1), (8, 2), (9, 3), (10, 4), (11, 5)]
    last = mapping.LastMapping(mapping.LastMapping.Config(include_last=True))
    assert last.layer_pairs(6, 3) == [(4, 1), (5, 2), (6, 3)]
    with pytest.raises(KdplugError, match="no deeper"):
        last.layer_pairs(2, 3)


def test_tap_pairs_on_models(teacher, student):
    uniform = mapping.UniformMapping(mapping.UniformMapping.Config(include_embeddings=True))
    assert uniform.tap_pairs(teacher, student, ("hidden", "attention_scores")) == [
        ("embeddings", "embeddings"),
        ("hidden/2", "hidden/1"), ("attention_scores/2", "attention_scores/1"),
        ("hidden/4", "hidden/2"), ("attention_scores/4", "attention_scores/2"),
    ]
    assert mapping.LastMapping().tap_pairs(teacher, student, ("cls",)) == [("cls/3", "cls/1")]


def test_missing_student_layer_is_a_clear_error(teacher, student):
    custom = mapping.CustomMapping(mapping.CustomMapping.Config(pairs=[[2, 1], [4, 3]]))
    with pytest.raises(KdplugError) as err:
        custom.tap_pairs(teacher, student)
    text = str(err.value)
    assert "student layer 3, which does not exist" in text
    assert "has 2 layers" in text and "'custom'" in text
    bad_teacher = mapping.CustomMapping(mapping.CustomMapping.Config(pairs=[[5, 1]]))
    with pytest.raises(KdplugError, match="teacher layer 5, which does not exist"):
        bad_teacher.resolve(teacher, student)
    with pytest.raises(KdplugError, match="embeddings can only map to embeddings"):
        mapping.CustomMapping(mapping.CustomMapping.Config(pairs=[[0, 1]])).tap_pairs(
            teacher, student)


def test_student_without_layers(teacher):
    bilstm = BiLstmClassifier(testing.VOCAB_SIZE, 2, embedding_dim=4, lstm_units=3,
                              hidden_dim=4)
    with pytest.raises(KdplugError, match="no transformer layers to map.*pooled, logits"):
        mapping.UniformMapping().tap_pairs(teacher, bilstm)


def test_configs_validate_through_the_schema():
    cfg = parse(mapping.CustomMapping.Config, {"pairs": [[2, 1], [4, 2]]}, "mapping")
    assert mapping.CustomMapping(cfg).layer_pairs(4, 2) == [(2, 1), (4, 2)]
    with pytest.raises(ConfigError, match="mapping.*integer pairs"):
        parse(mapping.CustomMapping.Config, {"pairs": [[2, 1, 3]]}, "mapping")
    with pytest.raises(ConfigError, match=r"mapping\.every: must be >= 1 \(got 0\)"):
        parse(mapping.SkipMapping.Config, {"every": 0}, "mapping")
    with pytest.raises(ConfigError, match="unknown key"):
        parse(mapping.UniformMapping.Config, {"include_embedding": True}, "mapping")
