"""`kdplug validate --build` (`kdplug.run.preflight.check_build`): the
teacher, student and stages built before any run, and what only they show.
(The inputs alone: tests/config and tests/data; a tap the teacher's family
lacks, an untrained head: tests/run/test_families_end_to_end.py.)"""

from kdplug.cli import main
from kdplug.config import load_config
from kdplug.run.preflight import check_build
from kdplug.testing.toy_config import write_toy_config


def test_prints_every_stage_with_its_terms(tmp_path, capsys):
    path = write_toy_config(tmp_path, {"name": "tinybert"},
                            student={"kind": "truncated", "layers": [1]})
    assert main(["validate", "--build", path]) == 0
    out = capsys.readouterr().out
    stages = [line for line in out.splitlines() if line.startswith("stage ")]
    assert [line.split(":")[0] for line in stages] == [
        "stage general", "stage task_intermediate", "stage task_prediction"]
    assert "attention" in stages[1] and out.rstrip().endswith(f"{path}: OK")
    assert check_build(load_config(path)) == stages


def test_a_mapping_beyond_the_students_layers_fails(tmp_path, capsys):
    path = write_toy_config(
        tmp_path, {"name": "tinybert", "stages": ["task_intermediate"],
                   "mapping": {"name": "custom", "pairs": [[2, 3]]}},
        student={"kind": "truncated", "layers": [1]})
    assert main(["validate", path]) == 0  # the config and inputs are fine
    capsys.readouterr()
    assert main(["validate", "--build", path]) == 2
    err = capsys.readouterr().err
    assert "student layer 3, which does not exist" in err


def test_a_runner_of_its_own_without_check_build_is_not_dry_built(tmp_path):
    """A method's own runner dry-builds in `Runner.check_build` (mtdnn-ensemble
    and cmlm-seq2seq: tests/plugins); one that has none builds nothing."""
    path = write_toy_config(tmp_path, {"name": "kd"})
    config = load_config(path)
    assert check_build(config)  # single-task: built
    config.method.name = "mtdnn-ensemble"

    class Manager:  # a method whose runner is its own, without check_build
        methods = {"mtdnn-ensemble": type("M", (), {
            "__init__": lambda self, cfg: None, "runner": object()})}

    assert check_build(config, Manager()) == []


def test_early_stopping_naming_a_missing_stage_fails_with_the_run_check(tmp_path, capsys):
    path = write_toy_config(tmp_path, {"name": "kd"},
                            training={"early_stopping": {"stages": ["distil"]}})
    assert main(["validate", path]) == 0  # needs the method's stages to see
    capsys.readouterr()
    assert main(["validate", "--build", path]) == 2
    err = capsys.readouterr().err
    assert "training.early_stopping.stages[0]" in err and "no stage 'distil'" in err



def test_a_student_layer_beyond_the_teachers_names_the_file_and_field(tmp_path, capsys):
    """The student kind's own check (it has no file) comes out as a config
    error: file, `student`, the layers and the teacher's depth."""
    path = write_toy_config(tmp_path, {"name": "kd"},
                            student={"kind": "truncated", "layers": [0, 2]})
    assert main(["validate", "--build", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kdplug: error: {path}: student: layers [0, 2] must be "
                   "non-empty 0-based indices below the teacher's 2 layers"]
