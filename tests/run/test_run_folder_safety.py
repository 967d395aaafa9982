"""`kdplug run` writes only into a kdplug run folder (issue #51, item 9):
a folder of the user's files is refused, `--fresh` moves only run folders
and never the working folder, and the run folder is resolved once."""

import os

import pytest

from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.run.context import RunContext
from kdplug.run.experiment import Experiment
from kdplug.run.run_folder import RunFolder
from kdplug.testing.toy_config import write_toy_config


def _user_files(path):
    path.mkdir()
    (path / "summary.md").write_text("my notes")


def _lock_only(path):  # a run stopped before it recorded anything
    path.mkdir()
    (path / ".lock").write_text("process 1")


def _recorded(path):
    RunFolder(path).record({"seed": 0})


def _stages(path):  # a kdplug 0.1 run folder: stages, no settings.json
    (path / "stages").mkdir(parents=True)
    (path / "summary.md").write_text("# run")


# (id, what is at the path, whether kdplug may write there)
FOLDERS = [
    ("missing", lambda path: None, True),
    ("empty", lambda path: path.mkdir(), True),
    ("lock-only", _lock_only, True),
    ("settings-recorded", _recorded, True),
    ("stages-of-kdplug-0.1", _stages, True),
    ("user-files", _user_files, False),
    ("settings-json-of-the-user", lambda path: (path.mkdir(), (
        path / "settings.json").write_text('{"theme": "dark"}')), False),
]


@pytest.mark.parametrize("case", FOLDERS, ids=[c[0] for c in FOLDERS])
def test_which_folders_are_run_folders(case, tmp_path):
    _, make, owned = case
    make(tmp_path / "run")
    folder = RunFolder(tmp_path / "run")
    assert folder.is_run_folder() is owned
    if owned:
        folder.check_owner("x.yaml")
        return
    before = sorted(os.listdir(tmp_path / "run"))
    for fresh in (False, True):
        with pytest.raises(ConfigError, match="not a kdplug run folder") as e:
            folder.check_owner("x.yaml", fresh=fresh)
        assert str(e.value).startswith(f"x.yaml: output_dir: {folder.path} holds ")
    with pytest.raises(ConfigError, match="--fresh moves only kdplug run folders"):
        folder.move_aside("x.yaml")
    assert sorted(os.listdir(tmp_path / "run")) == before  # not moved, not touched


@pytest.mark.parametrize("where", ["the folder", "a folder inside it"])
def test_fresh_never_moves_the_working_folder(where, tmp_path, monkeypatch):
    _recorded(tmp_path / "run")
    (tmp_path / "run" / "notes").mkdir()
    monkeypatch.chdir(tmp_path / "run" / ("notes" if where != "the folder" else ""))
    folder = RunFolder(tmp_path / "run")
    folder.check_owner("x.yaml")  # a run into it is fine
    with pytest.raises(ConfigError, match="--fresh would move .* the working folder"):
        folder.move_aside("x.yaml")
    assert (tmp_path / "run" / "settings.json").is_file()


def test_the_run_folder_is_resolved_once(tmp_path, monkeypatch):
    """`output_dir: .` after `--fresh` moved the working folder would
    resolve inside the moved folder: the run uses the folder it locked."""
    config = load_config(write_toy_config(tmp_path, {"name": "kd"}, num_examples=40))
    answers = iter([str(tmp_path / "first")] + [str(tmp_path / "second")] * 10)
    monkeypatch.setattr(type(config), "run_dir", lambda self: next(answers))
    seen = []

    class Stop(Exception):
        pass

    def create(cls, config, *args, run_dir=None, **kwargs):
        seen.append(run_dir)
        raise Stop

    monkeypatch.setattr(RunContext, "create", classmethod(create))
    with pytest.raises(Stop):
        Experiment(config).run()
    assert seen == [str(tmp_path / "first")] and (tmp_path / "first" / ".lock").is_file()
