import dataclasses
import pathlib

import pytest
import yaml

from kdplug import ConfigError
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.config.experiment_config import document_keys
from kdplug.config.experiment_config import document_schema

ROOT = pathlib.Path(__file__).parents[2]


def base():
    return {
        "name": "t",
        "data": {"path": "data.tsv"},
        "teacher": {"source": "some/dir"},
        "method": {"name": "kd"},
    }


def error_for(doc, tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    return info.value, str(path)


def test_every_shipped_config_validates():
    configs = sorted((ROOT / "configs").glob("*.yaml"))
    assert configs
    for path in configs:
        load_config(str(path))


def test_defaults_come_from_method_and_student_plugins():
    config = config_from_dict(base())
    assert config.method_config.temperature == 2.0
    assert config.student.name == "truncated"
    assert config.student_config.layers == "every_other"
    assert config.training.batch_size == 32


def test_a_top_level_key_is_declared_once():
    """`ExperimentConfig`'s `top_level()` fields are the document's keys: what a
    document may hold, what `to_dict` writes (in that order) and what a
    resolved config reads back as it was."""
    keys = [f.name for f in document_keys()]
    assert keys[:3] == ["name", "seed", "output_dir"]
    assert [f.name for f in dataclasses.fields(document_schema())] == keys
    with pytest.raises(ConfigError) as info:  # what `parse` accepts
        config_from_dict({**base(), "nope": 1})
    assert info.value.message.split("valid keys: ")[1].split(", ") == keys
    config = config_from_dict({**base(), "seed": 7, "cache": False})
    written = config.to_dict()
    assert list(written) == keys
    assert (written["seed"], written["output_dir"], written["cache"]) == (
        7, "runs/{name}", False)
    assert config_from_dict(written).to_dict() == written


def test_a_new_top_level_key_needs_only_its_field(monkeypatch):
    """One `top_level()` field is all a new key needs: the document takes
    it (typed, with its default), the config holds it, `to_dict` writes it
    back and the written config reads back the same."""
    from kdplug.config import experiment_config
    from kdplug.config import loading

    @dataclasses.dataclass(kw_only=True)
    class WithComment(experiment_config.ExperimentConfig):
        comment: str = experiment_config.top_level(default="")

    monkeypatch.setattr(experiment_config, "ExperimentConfig", WithComment)
    monkeypatch.setattr(loading, "ExperimentConfig", WithComment)
    experiment_config.document_schema.cache_clear()
    try:
        config = config_from_dict({**base(), "comment": "hello"})
        assert config.comment == "hello"
        assert config.to_dict()["comment"] == "hello"
        assert config_from_dict(config.to_dict()).to_dict() == config.to_dict()
        assert config_from_dict(base()).comment == ""
        with pytest.raises(ConfigError, match="expected a string") as info:
            config_from_dict({**base(), "comment": 3})
        assert info.value.field == "comment"
    finally:
        experiment_config.document_schema.cache_clear()


def test_unknown_top_level_key_suggests(tmp_path):
    doc = base()
    doc["trainng"] = {}
    err, path = error_for(doc, tmp_path)
    assert err.file == path and err.field == "trainng"
    assert "did you mean 'training'" in str(err)


def test_unknown_nested_key_names_dotted_path(tmp_path):
    doc = base()
    doc["training"] = {"batch_sise": 8}
    err, _ = error_for(doc, tmp_path)
    assert err.field == "training.batch_sise"
    assert "did you mean 'batch_size'" in str(err)


def test_unknown_method_option_is_checked_against_plugin_config(tmp_path):
    doc = base()
    doc["method"]["temprature"] = 3
    err, _ = error_for(doc, tmp_path)
    assert err.field == "method.temprature" and "'temperature'" in str(err)


def test_unknown_plugin_name_suggests(tmp_path):
    doc = base()
    doc["method"]["name"] = "kdd"
    err, _ = error_for(doc, tmp_path)
    assert err.field == "method.name" and "did you mean 'kd'" in str(err)
    doc = base()
    doc["student"] = {"kind": "truncatd"}
    err, _ = error_for(doc, tmp_path)
    assert err.field == "student.kind" and "'truncated'" in str(err)


@pytest.mark.parametrize(
    "section,key,value,message",
    [
        ("training", "epochs", "three", "expected an integer"),
        ("training", "epochs", 0, "must be in [1, 10000]"),
        ("training", "jit_compile", "yes", "expected true or false"),
        ("training", "learning_rate", -1.0, "must be in (0, 10]"),
        ("data", "sequence_length", 2, "sequence_length"),
        ("data", "bad_rows", "ignore", "must be one of 'error', 'skip'"),
        ("method", "alpha", 1.5, "method.alpha: must be in [0, 1] (got 1.5)"),
    ],
)
def test_bad_values_name_field_and_value(tmp_path, section, key, value, message):
    doc = base()
    doc.setdefault(section, {})[key] = value
    err, path = error_for(doc, tmp_path)
    text = str(err)
    assert path in text and message in text
    assert section in text


@pytest.mark.parametrize("pipeline,message", [
    ({"length_chunks": 0}, "length_chunks: must be in [1, 64] (got 0)"),
    ({"dtype": "int8"}, "must be one of 'auto', 'float32'"),
    ({"trim_pading": True}, "'trim_padding'"),
])
def test_bad_teacher_pipeline_names_the_field(tmp_path, pipeline, message):
    doc = base()
    doc["teacher"]["pipeline"] = pipeline
    err, path = error_for(doc, tmp_path)
    assert path in str(err) and message in str(err)
    assert "teacher.pipeline" in str(err)


@pytest.mark.parametrize("value,expected", [
    (None, None), (False, None), (True, (16, 8)), ({"window": 1}, (1, 8)),
    ({"window": 4, "multiple": 16}, (4, 16)),
])
def test_length_buckets_switch_and_defaults(value, expected):
    doc = base()
    doc["training"] = {"length_buckets": value}
    buckets = config_from_dict(doc).training.length_buckets
    assert (buckets and (buckets.window, buckets.multiple)) == expected


@pytest.mark.parametrize("value,message", [
    ({"window": 0}, "training.length_buckets.window: must be in [1, 4096] (got 0)"),
    ({"multipl": 8}, "'multiple'"),
    ("yes", "training.length_buckets: expected a mapping"),
])
def test_bad_length_buckets_name_the_field(tmp_path, value, message):
    doc = base()
    doc["training"] = {"length_buckets": value}
    err, path = error_for(doc, tmp_path)
    assert path in str(err) and message in str(err)


def test_missing_required_field(tmp_path):
    doc = base()
    del doc["teacher"]
    err, _ = error_for(doc, tmp_path)
    assert err.field == "teacher" and "required" in str(err)


def test_invalid_yaml_and_missing_file(tmp_path):
    err, path = error_for("name: [unclosed\n", tmp_path)
    assert "invalid YAML" in str(err) and path in str(err)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(str(tmp_path / "nope.yaml"))
    err, _ = error_for("- just\n- a list\n", tmp_path)
    assert "mapping" in str(err)


def test_paths_resolve_relative_to_the_config_file(tmp_path):
    path = tmp_path / "sub" / "exp.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(base()))
    config = load_config(str(path))
    assert config.resolve_path(config.data.path) == str(tmp_path / "sub" / "data.tsv")
