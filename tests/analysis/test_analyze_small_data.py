"""`kdplug analyze` on small data (issue #51): a probing task the corpus is
too small for is left out with a warning in the report, and the rest (the
other tasks, the behaviour part) is written; gold labels show the run's
class names."""

import json
import os

import pytest

from kdplug.cli import main
from kdplug.testing.toy_config import write_toy_config

# Both tests read the module's toy run (about 20 s on 2 busy cores).
pytestmark = pytest.mark.slow

# word_content needs sentences holding exactly one of its middle-frequency
# words: none of the toy sentences qualify.
PROBING = {"tasks": ["sentence_length", "word_content"], "max_examples": 100,
           "seeds": [0], "max_iter": 50}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A toy run on 200 sentences whose classes have names, with an
    `analysis:` section asking for a task these sentences cannot give."""
    folder = tmp_path_factory.mktemp("small")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDPLUG_CACHE_DIR", str(folder / "cache"))
        config = write_toy_config(
            folder, {"name": "kd", "alpha": 0.5}, num_examples=200,
            student={"kind": "truncated", "layers": [1]}, training={"epochs": 1},
            data={"label_names": ["negative", "positive"]}, export=False,
            analysis={"probing": PROBING, "behaviour": {"top_n": 3}})
        code = main(["run", config])
    return {"code": code, "run_dir": str(folder / "runs" / "toy"),
            "cache": str(folder / "cache")}


def _read(run_dir):
    folder = os.path.join(run_dir, "analysis")
    with open(os.path.join(folder, "analysis.json"), encoding="utf-8") as f:
        result = json.load(f)
    with open(os.path.join(folder, "analysis.md"), encoding="utf-8") as f:
        return result, f.read()


def _check(result, markdown, student):
    (warning,) = result["warnings"]
    assert warning.startswith("probing task 'word_content': only 0 of ")
    assert warning.endswith("left out of this analysis")
    assert [t["name"] for t in result["probing"]["tasks"]] == ["sentence_length"]
    assert list(result["behaviour"]) == [student]
    assert "## Warnings" in markdown and "'word_content': only 0 of" in markdown
    assert "## Behaviour" in markdown
    # the gold labels of the disagreements table, by class name
    table = markdown.split("### Where they disagree most")[1]
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 3 and {row[1] for row in rows} <= {"negative", "positive"}


def test_the_runs_own_analysis_skips_a_task_the_data_cannot_give(small_run):
    assert small_run["code"] == 0  # it used to fail the run, after training
    result, markdown = _read(small_run["run_dir"])
    _check(result, markdown, "student")
    assert result["behaviour"]["student"]["label_names"] == ["negative", "positive"]


def test_analyze_writes_the_behaviour_part_beside_the_warning(
        small_run, monkeypatch, capsys):
    monkeypatch.setenv("KDPLUG_CACHE_DIR", small_run["cache"])
    run_dir = small_run["run_dir"]
    os.remove(os.path.join(run_dir, "analysis", "analysis.json"))
    assert main(["analyze", run_dir, "--tasks", "word_content,sentence_length",
                 "--seeds", "0", "--max-examples", "100"]) == 0
    assert "word_content" in capsys.readouterr().err  # the warning, logged
    result, markdown = _read(run_dir)
    _check(result, markdown, "toy")
