"""`TeacherSource`: each kind of source told apart from its files, whether
it brings a head, its pooling, its description, without TensorFlow."""

import json
import os
import subprocess
import sys

import pytest

from kdplug.errors import ConfigError
from kdplug.errors import DataError
from kdplug.teacher.teacher_source import FILE
from kdplug.teacher.teacher_source import HF_FOLDER
from kdplug.teacher.teacher_source import HUB_PRESET
from kdplug.teacher.teacher_source import KERAS_FILE
from kdplug.teacher.teacher_source import PRESET_NAME
from kdplug.teacher.teacher_source import TeacherSource


def folder(path, config, files=(), pooling=None):
    os.makedirs(path)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    for name in files:
        open(os.path.join(path, name), "w").close()
    if pooling:
        os.makedirs(os.path.join(path, "1_Pooling"))
        with open(os.path.join(path, "1_Pooling", "config.json"), "w") as f:
            json.dump({f"pooling_mode_{pooling}": True}, f)
    return str(path)


@pytest.fixture
def sources(tmp_path):
    keras_file = tmp_path / "teacher.keras"
    keras_file.write_bytes(b"")
    other = tmp_path / "notes.txt"
    other.write_text("x")
    return {
        "keras": str(keras_file),
        "backbone": folder(tmp_path / "backbone", {"class_name": "BertBackbone"}),
        "classifier": folder(tmp_path / "classifier", {"class_name": "BertBackbone"},
                             files=["task.json"]),
        "hf": folder(tmp_path / "hf", {"model_type": "bert"}, files=["vocab.txt"],
                     pooling="mean_tokens"),
        "hf_head": folder(tmp_path / "hf_head", {
            "model_type": "bert", "architectures": ["BertForSequenceClassification"]},
            files=["vocab.txt"]),
        "file": str(other),
    }


@pytest.mark.parametrize("name,kind,has_head,pooling", [
    ("keras", KERAS_FILE, True, "cls"),
    ("backbone", HUB_PRESET, False, "cls"),
    ("classifier", HUB_PRESET, True, "cls"),
    ("hf", HF_FOLDER, False, "mean"),
    ("hf_head", HF_FOLDER, True, "cls"),
    ("file", FILE, False, "cls"),
])
def test_each_kind_is_told_from_its_files(sources, name, kind, has_head, pooling):
    source = TeacherSource.at(sources[name])
    assert (source.kind, source.has_head, source.pooling("auto")) == (kind, has_head, pooling)
    assert source.pooling("mean") == "mean" and source.pooling("cls") == "cls"
    assert source.path in source.describe()


def test_a_preset_name_and_a_config_value(sources, tmp_path):
    named = TeacherSource.resolve("bert_tiny_en_uncased")
    assert (named.kind, named.has_head, named.pooling("auto")) == (PRESET_NAME, False, "cls")
    assert "keras-hub preset name" in named.describe()
    beside = TeacherSource.resolve("hf", resolve_path=lambda p: os.path.join(tmp_path, p))
    assert beside.kind == HF_FOLDER and beside.path == sources["hf"]


def test_bad_sources_name_their_field(tmp_path):
    with pytest.raises(ConfigError, match="student.source"):
        TeacherSource.resolve("./missing/model", field="student.source")
    with pytest.raises(DataError, match="model_type is 'gpt9'"):
        TeacherSource.at(folder(tmp_path / "odd", {"model_type": "gpt9"}))


def test_it_needs_no_tensorflow(sources):
    code = ("import sys; from kdplug.teacher.teacher_source import TeacherSource; "
            f"TeacherSource.at({sources['hf']!r}).has_head; "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
