"""`kdplug.finished_run`: the one reader of a finished run folder, for
`kdplug analyze` (`load_run`) and `TrainedRun` (`kdplug predict`, ...)."""

import json

import pytest

from kdplug.analysis.run_models import analyze_runs
from kdplug.errors import KdplugError
from kdplug.finished_run import check_finished
from kdplug.finished_run import read_run_config
from kdplug.finished_run import student_file
from kdplug.run.trained_run import TrainedRun
from kdplug.run_files import CONFIG
from kdplug.run_files import EXPORT
from kdplug.run_files import SOURCE
from kdplug.run_files import STUDENT_FILE

CONFIG_TEXT = ("name: toy\ndata: {path: data.tsv}\nmethod: {name: kd}\n"
               "teacher: {source: bert_tiny_en_uncased}\n")


def test_analysis_and_trained_runs_share_one_finished_check(tmp_path):
    for opener in (check_finished, TrainedRun, lambda run: analyze_runs([run])):
        with pytest.raises(KdplugError, match="no config.yaml; not a run folder"):
            opener(str(tmp_path))
    (tmp_path / CONFIG).write_text(CONFIG_TEXT)
    for opener in (check_finished, TrainedRun, lambda run: analyze_runs([run])):
        with pytest.raises(KdplugError, match=r"no student.keras \(nor export/"):
            opener(str(tmp_path))


def test_the_student_file_falls_back_to_the_keras_export(tmp_path):
    assert student_file(str(tmp_path)) is None
    (tmp_path / EXPORT).mkdir()
    (tmp_path / EXPORT / STUDENT_FILE).write_bytes(b"")
    assert student_file(str(tmp_path)) == str(tmp_path / EXPORT / STUDENT_FILE)
    (tmp_path / STUDENT_FILE).write_bytes(b"")
    assert student_file(str(tmp_path)) == str(tmp_path / STUDENT_FILE)


def test_the_config_paths_resolve_against_the_file_the_run_started_from(tmp_path):
    run = tmp_path / "runs" / "toy"
    run.mkdir(parents=True)
    (run / CONFIG).write_text(CONFIG_TEXT)
    (run / STUDENT_FILE).write_bytes(b"")
    # a run made before source.json: its own config.yaml
    assert read_run_config(str(run)).resolve_path("data.tsv") == str(run / "data.tsv")
    (run / SOURCE).write_text(json.dumps({"config_file": str(tmp_path / "toy.yaml")}))
    assert read_run_config(str(run)).resolve_path("data.tsv") == str(tmp_path / "data.tsv")
    other = tmp_path / "other" / "toy.yaml"
    other.parent.mkdir()
    assert read_run_config(str(run), str(other)).resolve_path("data.tsv") == str(
        other.parent / "data.tsv")
