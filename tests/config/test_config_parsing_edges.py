"""Config parsing at its edges (issue #51, items 5, 7 and 11): numbers YAML
reads as text (`5e-5`), integers too long for Python, anchor bombs echoed
in an error, keys given twice, and `student.source` kept as written like
`teacher.source` in the resolved config."""

import textwrap
import time

import pytest
import yaml

from kdplug import ConfigError
from kdplug.cli import main
from kdplug.config import config_from_dict
from kdplug.config import load_config

BASE = """\
name: t
data: {path: data.tsv}
teacher: {source: some/dir}
method: {name: kd}
"""


def write(tmp_path, text):
    path = tmp_path / "x.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def error_for(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value, path


def bomb(levels, width=10):
    """One flow value of `width ** levels` nested list items, a few lines
    of YAML: each level defines its anchor in its first item and repeats
    it by alias."""
    text = f"&a0 [{', '.join(['lol'] * width)}]"
    for i in range(1, levels + 1):
        text = f"&a{i} [{text}, {', '.join([f'*a{i - 1}'] * (width - 1))}]"
    return text


@pytest.mark.parametrize("written, value", [
    ("5e-5", 5e-5), ("1E-3", 1e-3), ("3e+0", 3.0), ("+2e-1", 0.2), ("'1e-4'", 1e-4),
    ("5.0e-5", 5e-5), ("1", 1.0), (".5e-1", 0.05),
])
def test_float_fields_take_numbers_yaml_reads_as_text(tmp_path, written, value):
    """YAML 1.1 reads `5e-5` (no dot) as the string '5e-5'."""
    path = write(tmp_path, BASE + f"training: {{learning_rate: {written}}}\n")
    assert load_config(path).training.learning_rate == pytest.approx(value)


@pytest.mark.parametrize("written, message", [
    ("fast", "expected a number (got 'fast')"),
    ("5e-5x", "expected a number (got '5e-5x')"),
    ("'1e400'", "expected a finite number (got '1e400')"),
    ("'nan'", "expected a number (got 'nan')"),
    ("1" + "0" * 400, "expected a finite number (got 1000"),
], ids=["text", "trailing-text", "overflowing-text", "nan-text", "401-digit-integer"])
def test_float_fields_still_refuse_text_and_infinities(tmp_path, written, message):
    err, path = error_for(tmp_path, BASE + f"training: {{learning_rate: {written}}}\n")
    assert err.field == "training.learning_rate" and err.file == path
    assert message in str(err)


def test_a_numeric_string_is_not_a_number_for_other_types():
    doc = yaml.safe_load(BASE)
    doc["training"] = {"epochs": "3"}
    with pytest.raises(ConfigError, match="training.epochs: expected an integer"):
        config_from_dict(doc)


def test_an_integer_longer_than_python_reads_is_a_config_error(tmp_path):
    err, path = error_for(tmp_path, BASE + "seed: " + "9" * 5000 + "\n")
    assert str(err) == (f"{path}: line 5: an integer of 5000 digits, more than the "
                        "4300 Python reads; quote it if it is text")


def test_a_yaml_value_python_cannot_build_names_its_line(tmp_path):
    err, path = error_for(tmp_path, BASE + "seed: 2024-13-01\n")
    assert str(err).startswith(f"{path}: line 5: cannot read this value:")


def test_an_anchor_bomb_in_an_error_is_echoed_in_a_few_characters(tmp_path):
    """A million items behind one alias: the error shows a bounded
    echo of the value, not its whole text."""
    started = time.monotonic()
    err, path = error_for(tmp_path, BASE + f"training: {{learning_rate: {bomb(6)}}}\n")
    assert err.field == "training.learning_rate"
    message = str(err)[len(str(path)):]  # the temporary path's length varies
    assert "expected a number (got [[[" in message and len(message) < 160
    assert time.monotonic() - started < 5


def test_an_anchor_bomb_as_a_choice_or_a_name_is_echoed_briefly(tmp_path):
    err, _ = error_for(tmp_path, BASE.replace(
        "method: {name: kd}", f"method: {{name: kd, soft_loss: {bomb(6)}}}"))
    assert err.field == "method.soft_loss" and len(str(err)) < 300
    err, _ = error_for(tmp_path, BASE.replace("name: t", f"name: {bomb(6)}"))
    assert err.field == "name" and len(str(err)) < 200


def test_bounded_repr_cuts_long_values():
    from kdplug.errors import bounded_repr

    assert bounded_repr("abc") == "'abc'"
    assert len(bounded_repr("x" * 10_000)) <= 80
    assert bounded_repr(10 ** 5000).startswith("<an integer of about 500")
    nested = [[list(range(100))] * 100] * 100
    assert len(bounded_repr(nested)) <= 80 and bounded_repr(nested).endswith("...")


def test_a_key_given_twice_names_the_file_line_and_key(tmp_path):
    err, path = error_for(tmp_path, BASE + "training:\n  epochs: 1\ntraining:\n  epochs: 3\n")
    assert str(err) == (f"{path}: line 7: 'training' is given twice in one mapping "
                        "(first at line 5); YAML would keep only the last one, so "
                        "merge them")
    err, _ = error_for(tmp_path, BASE + "training:\n  epochs: 1\n  batch_size: 4\n"
                                        "  epochs: 2\n")
    assert "line 8: 'epochs' is given twice" in str(err)


def test_merge_keys_may_still_be_overridden(tmp_path):
    path = write(tmp_path, """\
        name: t
        data: {path: data.tsv}
        teacher:
          source: some/dir
          finetune: &recipe {epochs: 1, batch_size: 4}
        method: {name: kd}
        training:
          <<: *recipe
          epochs: 2
        """)
    training = load_config(path).training
    assert (training.epochs, training.batch_size) == (2, 4)


def test_validate_shows_each_edge_as_one_error_line(tmp_path, capsys):
    for text in (BASE + "seed: " + "9" * 5000 + "\n",
                 BASE + "name: again\n",
                 BASE + f"training: {{learning_rate: {bomb(6)}}}\n"):
        path = write(tmp_path, text)
        assert main(["validate", path]) == 2
        err = capsys.readouterr().err
        assert err.count("kdplug: error:") == 1 and len(err) < 400, err


def test_student_source_stays_as_written_like_teacher_source(tmp_path):
    (tmp_path / "student_model").mkdir()
    (tmp_path / "teacher_model").mkdir()
    path = write(tmp_path, """\
        name: t
        data: {path: data.tsv}
        teacher: {source: ./teacher_model}
        method: {name: kd}
        student: {kind: hub, source: ./student_model}
        """)
    config = load_config(path)
    resolved = config.to_dict()
    assert resolved["teacher"]["source"] == "./teacher_model"
    assert resolved["student"]["source"] == "./student_model"
    # what the student loads, and what the run fingerprints, is the folder
    assert config.student_config.source == str(tmp_path / "student_model")
    assert config.input_files["student.source"] == str(tmp_path / "student_model")


def test_validate_prints_only_the_error_when_the_data_is_bad(tmp_path, capsys):
    # the resolved config (dozens of lines) used to come first, the error last
    from kdplug.cli import main

    (tmp_path / "data.tsv").write_text("text\tlabel\tsplit\n\t1\ttrain\n")
    path = tmp_path / "x.yaml"
    path.write_text("name: x\ndata: {path: data.tsv}\nteacher: {source: t}\n"
                    "method: {name: kd}\n")
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("kdplug: error:") == 1
