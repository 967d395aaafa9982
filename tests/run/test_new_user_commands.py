"""What a new user hit (issue #51), on toy runs: the teacher commands of a
regression and a multi-label run (`predict`, `evaluate`, `analyze` with the
fine-tuned teacher, whose cache key is the task's objective's), the checks
`kdplug run` and `validate --build` make before the teacher is fine-tuned,
and config errors that name the file, the field and a fix that exists."""

import json
import os
import shutil
import tempfile

import pytest

from kdplug.cli import main
from kdplug.testing import families
from kdplug.testing.toy_config import write_toy_config
from kdplug.testing.toy_tasks import write_toy_multi_label_jsonl

# A toy run's analysis: one built probing task the toy sentences can give.
ANALYZE = ["--tasks", "bigram_shift", "--seeds", "0", "--max-examples", "60"]


def _run(folder, **sections):
    """A finished 1-epoch toy run under `folder` (`runs/toy`); returns
    `(config, run folder, its metrics.json)`."""
    config = write_toy_config(
        folder, {"name": "kd", "alpha": 0.5}, num_examples=120,
        student={"kind": "truncated", "layers": [1]}, training={"epochs": 1},
        export=False, **sections)
    assert main(["run", config]) == 0
    run_dir = os.path.join(folder, "runs", "toy")
    with open(os.path.join(run_dir, "metrics.json"), encoding="utf-8") as f:
        return config, run_dir, json.load(f)


@pytest.fixture(scope="module")
def task_runs(tmp_path_factory):
    """A regression run (the `score` column) and a multi-label run (JSONL
    label lists), their teachers fine-tuned into one cache."""
    folder = tmp_path_factory.mktemp("task_runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDPLUG_CACHE_DIR", str(folder / "cache"))
        regression = _run(folder / "regression",
                          data={"task": "regression", "label_column": "score"})
        labels = write_toy_multi_label_jsonl(folder / "labels.jsonl", 120)
        multi_label = _run(folder / "multi_label",
                           data={"path": labels, "task": "multi_label",
                                 "label_column": "labels"})
    return {"cache": folder / "cache", "regression": regression,
            "multi_label": multi_label}


@pytest.fixture
def cache_of(task_runs, monkeypatch):
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(task_runs["cache"]))
    return task_runs


def _evaluate(run_dir, tmp_path, model="both"):
    out = tmp_path / f"metrics-{model}.json"
    assert main(["evaluate", run_dir, "--split", "test", "--model", model,
                 "--output", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["regression", "multi_label"])
def test_teacher_commands_of_a_regression_and_a_multi_label_run(
        cache_of, kind, tmp_path, capsys):
    """The run cached its teacher under the task's objective's key; every
    teacher command finds it there (it looked under the classification key
    and sent the user to `finetune-teacher`, which changed nothing)."""
    _, run_dir, report = cache_of[kind]
    assert main(["predict", run_dir, "--model", "teacher", "--text", "a fine film"]) == 0
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert json.loads(line)["text"] == "a fine film"
    metrics = _evaluate(run_dir, tmp_path)
    primary = report["primary_metric"]
    # the fine-tuned teacher, not a random head: the run's own test metric
    assert metrics["teacher"][primary] == pytest.approx(report["teacher"][primary],
                                                        abs=1e-4)
    assert main(["analyze", run_dir, *ANALYZE]) == 0
    with open(os.path.join(run_dir, "analysis", "analysis.json"), encoding="utf-8") as f:
        analysis = json.load(f)
    assert [m["name"] for m in analysis["models"]] == ["teacher", "toy"]
    assert "bigram_shift" in analysis["probing"]["results"]["teacher"]
    # behaviour compares predicted classes: left out, and the report says so
    assert "behaviour" not in analysis
    assert any(w.startswith("behaviour: left out") for w in analysis["warnings"])


@pytest.mark.slow
def test_the_way_back_for_a_missing_teacher_does_not_loop(
        task_runs, tmp_path, monkeypatch, capsys):
    """With the cached teacher gone, the error names `kdplug finetune-teacher
    CONFIG`; running it brings the teacher back where the commands look."""
    cache = tmp_path / "cache"
    shutil.copytree(task_runs["cache"], cache)
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(cache))
    config, run_dir, _ = task_runs["regression"]
    for entry in os.listdir(cache / "teachers"):
        shutil.rmtree(cache / "teachers" / entry)
    capsys.readouterr()
    assert main(["predict", run_dir, "--model", "teacher", "--text", "a fine film"]) == 2
    err = capsys.readouterr().err
    assert f"`kdplug finetune-teacher {config}`" in err
    assert main(["finetune-teacher", config]) == 0
    assert main(["predict", run_dir, "--model", "teacher", "--text", "a fine film"]) == 0


# ------------------------------------------- checks before the fine-tuning

def _preset(family, folder, **backbone):
    """A tiny keras-hub preset of `family` with backbone options of its own
    (`max_sequence_length`, `num_heads`); returns the folder."""
    with tempfile.TemporaryDirectory() as files:
        tokenizer = families.tiny_tokenizer(family, files)
        model = families.tiny_backbone(family, tokenizer.vocabulary_size(),
                                       num_layers=1, seed=1, **backbone)
    model.save_to_preset(str(folder))
    tokenizer.save_to_preset(str(folder))
    return str(folder)


def _roberta(root):
    return {"source": families.write_tiny_preset("roberta", root / "roberta")}


def short_hub_student(root):
    """The issue's case: the teacher takes more positions than the `hub`
    student (DistilBERT, 16 here) and data.sequence_length sits between."""
    return dict(method={"name": "kd"}, teacher=_roberta(root),
                student={"kind": "hub",
                         "source": _preset("distil_bert", root / "distil",
                                           max_sequence_length=16)},
                data={"sequence_length": 24})


def mapping_beyond_the_student(root):
    return dict(method={"name": "tinybert", "stages": ["task_intermediate"],
                        "mapping": {"name": "custom", "pairs": [[2, 3]]}},
                student={"kind": "truncated", "layers": [1]})


def early_stopping_on_a_missing_stage(root):
    return dict(method={"name": "kd"}, training={"early_stopping": {"stages": ["distil"]}},
                student={"kind": "truncated", "layers": [1]})


def augmenter_without_wordnet(root):
    (root / "no_wordnet").mkdir()
    return dict(method={"name": "kd"}, student={"kind": "truncated", "layers": [1]},
                augment=[{"name": "pos-replace", "n": 1, "pos_source": "wordnet",
                          "wordnet_dir": str(root / "no_wordnet")}])


BEFORE_FINETUNING = [
    (short_hub_student, "data.sequence_length",
     "above the student's maximum sequence length 16 (got 24)"),
    (mapping_beyond_the_student, "method.mapping",
     "layer mapping 'custom' pairs teacher layer 2 with student layer 3, which does "
     "not exist: the student has 1 layer (1..1; 0 is the embeddings)"),
    (early_stopping_on_a_missing_stage, "training.early_stopping.stages[0]",
     "no stage 'distil'"),
    (augmenter_without_wordnet, "augment[0]", "no WordNet database found"),
]


def _error(capsys):
    """The one `kdplug: error:` line of a failed command."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("kdplug: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("case, field, message", BEFORE_FINETUNING,
                         ids=[case.__name__ for case, *_ in BEFORE_FINETUNING])
def test_what_validate_build_checks_stops_a_run_before_the_teacher_is_finetuned(
        case, field, message, tmp_path, monkeypatch, capsys):
    """`validate` passes (the inputs are fine); `validate --build` and `kdplug
    run` fail with the same error, naming the file and the field, and the
    run fine-tunes no teacher first."""
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "cache"))
    sections = case(tmp_path)
    path = write_toy_config(tmp_path, sections.pop("method"), export=False, **sections)
    assert main(["validate", path]) == 0
    capsys.readouterr()
    for command in (["validate", "--build", path], ["run", path]):
        assert main(command) == 2
        line = _error(capsys)
        assert line.startswith(f"kdplug: error: {path}: {field}: ") and message in line
    teachers = tmp_path / "cache" / "teachers"
    assert not teachers.exists() or not os.listdir(teachers)  # nothing fine-tuned


# ------------------------------------------- errors that show the way out

@pytest.mark.slow
def test_a_token_level_method_with_a_hub_student_says_the_real_blocker_first(
        tmp_path, capsys):
    """Other head counts: the pair cannot work at any head reduction, so the
    error is the tokenizer, not a request for `head_reduction`."""
    student = _preset("bert", tmp_path / "bert", num_heads=4)
    path = write_toy_config(tmp_path, {"name": "tinybert"}, teacher=_roberta(tmp_path),
                            student={"kind": "hub", "source": student}, export=False)
    assert main(["validate", "--build", path]) == 2
    line = _error(capsys)
    assert line.startswith(f"kdplug: error: {path}: student.kind: ")
    assert "reads 'embeddings', which runs over token positions" in line
    assert "head" not in line


@pytest.mark.slow
def test_a_narrow_student_of_a_roberta_teacher_names_a_kind_that_works(tmp_path, capsys):
    path = write_toy_config(tmp_path, {"name": "kd"}, teacher=_roberta(tmp_path),
                            student={"kind": "narrow", "num_layers": 1, "hidden_dim": 8,
                                     "num_heads": 2, "intermediate_dim": 16},
                            export=False)
    assert main(["validate", "--build", path]) == 2
    line = _error(capsys)
    assert line.startswith(f"kdplug: error: {path}: student.kind: the teacher "
                           "(roberta, HubTextClassifier) has no 'num_segments'")
    assert "student config" not in line and "`truncated`" in line
    # the fix it names builds
    path = write_toy_config(tmp_path, {"name": "kd"}, teacher=_roberta(tmp_path),
                            student={"kind": "truncated", "layers": [0]}, export=False)
    assert main(["validate", "--build", path]) == 0


def test_a_layer_mapping_error_names_no_internal_object(tmp_path, capsys):
    sections = mapping_beyond_the_student(tmp_path)
    path = write_toy_config(tmp_path, sections.pop("method"), **sections)
    assert main(["validate", "--build", path]) == 2
    line = _error(capsys)
    assert f"{path}: method.mapping: " in line
    assert "BertClassifier" not in line and "bert_classifier" not in line
