"""Layer mappings named in a config are validated references: a name or a
name with options, checked when the config loads."""

import pytest

from kdplug import testing
from kdplug.config import MappingRef
from kdplug.config import config_from_dict
from kdplug.errors import ConfigError
from kdplug.mapping import CustomMapping
from kdplug.mapping import UniformMapping
from kdplug_plugins.students.narrow import NarrowStudent
from kdplug_plugins.tinybert.tinybert_method import TinyBertMethod

BASE = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}


def tinybert(mapping, file="x.yaml"):
    return config_from_dict({**BASE, "method": {"name": "tinybert", "mapping": mapping}},
                            file=file)


def test_a_name_resolves_and_prints_back_as_a_name():
    config = tinybert("uniform")
    ref = config.method_config.mapping
    assert isinstance(ref, MappingRef) and ref.cls is UniformMapping
    assert ref.build().layer_pairs(6, 3) == [(2, 1), (4, 2), (6, 3)]
    assert config.to_dict()["method"]["mapping"] == "uniform"
    default = config_from_dict({**BASE, "method": {"name": "tinybert"}})
    assert default.to_dict()["method"]["mapping"] == "uniform"
    assert default.method_config.mapping.cls is UniformMapping


def test_a_name_with_options_prints_every_option():
    config = tinybert({"name": "custom", "pairs": [[2, 1], [6, 3]]})
    ref = config.method_config.mapping
    assert ref.cls is CustomMapping
    assert ref.build().layer_pairs(6, 3) == [(2, 1), (6, 3)]
    assert config.to_dict()["method"]["mapping"] == {"name": "custom",
                                                     "pairs": [[2, 1], [6, 3]]}
    uniform = tinybert({"name": "uniform"}).to_dict()["method"]["mapping"]
    assert uniform == {"name": "uniform", "include_embeddings": False}


@pytest.mark.parametrize("mapping, field, message", [
    ("unifrom", "method.mapping", "unknown mapping 'unifrom' (did you mean 'uniform'?)"),
    ({"name": "custm", "pairs": [[1, 1]]}, "method.mapping.name",
     "unknown mapping 'custm' (did you mean 'custom'?)"),
    ({"pairs": [[1, 1]]}, "method.mapping.name", "required field is missing"),
    ({"name": "custom"}, "method.mapping.pairs", "required field is missing"),
    ({"name": "custom", "pairs": []}, "method.mapping", "at least one"),
    ({"name": "custom", "pairs": [[2, -1]]}, "method.mapping", "1-based"),
    ({"name": "custom", "pairs": [[2, 1, 3]]}, "method.mapping", "integer pairs"),
    ({"name": "skip", "evry": 2}, "method.mapping.evry",
     "unknown key 'evry' (did you mean 'every'?)"),
    (3, "method.mapping", "expected a mapping name or a mapping with a `name`"),
])
def test_bad_references_fail_when_the_config_loads(mapping, field, message):
    with pytest.raises(ConfigError) as e:
        tinybert(mapping)
    assert e.value.file == "x.yaml" and e.value.field == field
    assert message in str(e.value)


@pytest.mark.slow
def test_tinybert_with_a_custom_mapping_pairs_the_named_layers():
    teacher = testing.tiny_bert_classifier(num_layers=4, hidden_dim=16, num_heads=2)
    config = tinybert({"name": "custom", "pairs": [[2, 1], [3, 2]]}).method_config
    method = TinyBertMethod(config)
    student = method.build_student(teacher, NarrowStudent(NarrowStudent.Config(
        num_layers=2, hidden_dim=8, intermediate_dim=16, num_heads=2)), 2)
    _, hidden, attention = method.intermediate_terms(teacher, student)
    assert hidden.pairs == (("hidden/2", "hidden/1"), ("hidden/3", "hidden/2"))
    assert attention.pairs == (("attention_scores/2", "attention_scores/1"),
                               ("attention_scores/3", "attention_scores/2"))
    # a Config built in Python may hold a plain dict: resolved on use
    python = TinyBertMethod(TinyBertMethod.Config(
        mapping={"name": "custom", "pairs": [[4, 2]]}))
    assert python.layer_map(teacher, student) == [(4, 2)]
