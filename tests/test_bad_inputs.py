"""Every bad input a user can give the CLI, table-driven (issue #15).

Each case runs `kdplug` in-process on a config, data file, command line or
cache state with one thing wrong, and checks what a user sees: exit status
2, exactly one `kdplug: error:` line naming the file and the field (or the
row), no traceback, and nothing changed outside the cache (a sentinel folder,
the working directory, is snapshotted before and compared after). None of
these cases reaches training: `kdplug run` checks its inputs before it
creates the run folder, so no run folder may appear either.
"""

import copy
import hashlib
import json
import os
import sys

import pytest
import yaml

from kdplug.cli import main

ROWS = [("a fine film", 1), ("a dull film", 0), ("great acting", 1),
        ("weak plot", 0), ("loved it", 1), ("hated it", 0)]


def _tsv(rows_by_split, header="text\tlabel\tsplit"):
    lines = [header]
    for split, rows in rows_by_split.items():
        lines += [f"{t}\t{y}\t{split}" for t, y in rows]
    return "\n".join(lines) + "\n"


GOOD_TSV = _tsv({"train": ROWS, "dev": ROWS[:2], "test": ROWS[:2]})

BASE = {
    "name": "bad",
    "data": {"path": "data.tsv", "sequence_length": 16},
    "teacher": {"source": "teacher", "finetune": {"epochs": 1}},
    "method": {"name": "kd", "temperature": 2.0, "alpha": 0.5},
    "training": {"epochs": 1, "batch_size": 2},
}


def _set(doc, dotted, value):
    keys = dotted.split(".")
    node = doc
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    if value is DELETE:
        node.pop(keys[-1])
    else:
        node[keys[-1]] = value


DELETE = object()


def config(**changes):
    """The base config with `changes` ({"training.epochs": 0}) applied."""
    def make(root):
        doc = copy.deepcopy(BASE)
        for dotted, value in changes.items():
            _set(doc, dotted.replace("__", "."), value)
        (root / "x.yaml").write_text(yaml.safe_dump(doc))
        return ["validate", str(root / "x.yaml")]
    return make


def raw_config(text, command="validate"):
    def make(root):
        (root / "x.yaml").write_text(text)
        return [command, str(root / "x.yaml")]
    return make


def data_file(text, command="validate", name="data.tsv", **changes):
    def make(root):
        path = root / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        args = config(**{"data.path": name, **changes})(root)
        args[0] = command
        return args
    return make


def hf_folder(columns, **changes):
    """A folder saved by `datasets` (`columns`; None: only its marker file)
    named by data.path."""
    def make(root):
        folder = root / "hf"
        if columns is None:
            folder.mkdir()
            (folder / "dataset_dict.json").write_text('{"splits": ["train"]}')
        else:
            datasets = pytest.importorskip("datasets")
            datasets.Dataset.from_dict(columns).save_to_disk(str(folder))
        return config(**{"data.path": "hf", **changes})(root)
    return make


HIDDEN = []  # modules a case hides (None in sys.modules); put back after it


def without_module(module, make):
    """`make`, run as if `module` were not installed."""
    def hidden(root):
        HIDDEN.append((module, sys.modules.get(module, MISSING)))
        sys.modules[module] = None
        return make(root)
    return hidden


MISSING = object()


@pytest.fixture(autouse=True)
def _put_back_hidden_modules():
    yield
    while HIDDEN:
        module, was = HIDDEN.pop()
        if was is MISSING:
            sys.modules.pop(module, None)
        else:
            sys.modules[module] = was


def args(*argv):
    return lambda root: [a.replace("{root}", str(root)) for a in argv]


def run(make):
    def wrapped(root):
        argv = make(root)
        argv[0] = "run"
        return argv
    return wrapped


def cache_state(setup, *argv):
    def make(root):
        setup(root.parent / "cache")
        return list(argv)
    return make


def _cache_is_a_file(root):
    (root.parent / "cache").write_text("KDPLUG_CACHE_DIR names this file")
    return ["run", str(root / "ok.yaml")]


def _foreign_entry(cache):
    folder = cache / "outputs" / "abcdef0123456789"
    folder.mkdir(parents=True)
    (folder / "precious.txt").write_text("not kdplug's")


def _symlink_entry(cache):
    (cache / "teachers").mkdir(parents=True)
    target = cache.parent / "sentinel"
    os.symlink(target, cache / "teachers" / "0123456789abcdef")



# (id, builder, substrings the error line must contain)
CASES = [
    # ---------------------------------------------------------- the document
    ("unknown-top-key", config(trainig={}), ["x.yaml", "trainig", "training"]),
    ("unknown-data-key", config(data__text_colum="t"), ["x.yaml", "data.text_colum"]),
    ("missing-name", config(name=DELETE), ["x.yaml", "name", "required"]),
    ("missing-method", config(method=DELETE), ["x.yaml", "method"]),
    ("yaml-syntax", raw_config("name: [unclosed\n"), ["x.yaml", "invalid YAML"]),
    ("yaml-python-tag", raw_config("name: !!python/object/apply:os.system [ls]\n"),
     ["x.yaml", "invalid YAML"]),
    ("not-a-mapping", raw_config("- a\n- b\n"), ["x.yaml", "mapping"]),
    ("empty-file", raw_config(""), ["x.yaml", "mapping"]),
    ("not-utf8", raw_config("name: caf\udce9\n".encode("utf-8", "surrogateescape")
                            .decode("latin-1")), ["x.yaml"]),
    ("config-is-a-folder", args("validate", "{root}"), ["is a folder"]),
    ("config-missing", args("validate", "{root}/nope.yaml"), ["nope.yaml", "not found"]),
    ("output-dir-typo", config(output_dir="runs/{nmae}"),
     ["x.yaml", "output_dir", "{nmae}", "'name'"]),
    ("output-dir-brace", config(output_dir="runs/{"), ["x.yaml", "output_dir"]),
    ("output-dir-empty", config(output_dir=""), ["x.yaml", "output_dir"]),
    ("output-dir-under-a-file", config(output_dir="notes.txt/{name}"),
     ["x.yaml", "output_dir", "notes.txt is a file, not a folder"]),
    ("seed-negative", config(seed=-1), ["x.yaml", "seed", "[0, 4294967295]"]),
    ("seed-huge", config(seed=2 ** 40), ["x.yaml", "seed"]),
    ("seed-string", config(seed="abc"), ["x.yaml", "seed", "integer"]),
    # ------------------------------------------------------------- training
    ("epochs-zero", config(training__epochs=0), ["x.yaml", "training.epochs"]),
    ("epochs-huge", config(training__epochs=10 ** 12), ["x.yaml", "training.epochs"]),
    ("batch-zero", config(training__batch_size=0), ["x.yaml", "training.batch_size"]),
    ("lr-inf", config(training__learning_rate=float("inf")),
     ["x.yaml", "training.learning_rate", "finite"]),
    ("lr-nan", config(training__learning_rate=float("nan")),
     ["x.yaml", "training.learning_rate", "finite"]),
    ("lr-negative", config(training__learning_rate=-1e-4),
     ["x.yaml", "training.learning_rate"]),
    ("lr-zero", config(training__learning_rate=0), ["x.yaml", "training.learning_rate"]),
    ("lr-string", config(training__learning_rate="fast"),
     ["x.yaml", "training.learning_rate", "number"]),
    ("warmup-one", config(training__warmup_ratio=1.0), ["x.yaml", "training.warmup_ratio"]),
    ("weight-decay", config(training__weight_decay=-0.1),
     ["x.yaml", "training.weight_decay"]),
    ("steps-per-epoch", config(training__steps_per_epoch=0),
     ["x.yaml", "training.steps_per_epoch"]),
    ("optimizer", config(training__optimizer="adamx"),
     ["x.yaml", "training.optimizer", "adamw"]),
    ("strategy", config(training__strategy="gpu"), ["x.yaml", "training.strategy"]),
    ("schedule-no-term", config(training__schedules=[{"start": 1.0}]),
     ["x.yaml", "training.schedules[0].term"]),
    ("schedule-no-end", config(training__schedules=[
        {"term": "soft_ce", "start": 1.0, "kind": "linear"}]),
     ["x.yaml", "training.schedules[0]", "end is required"]),
    # -------------------------------------------------------------- teacher
    ("finetune-epochs", config(teacher__finetune__epochs=0),
     ["x.yaml", "teacher.finetune.epochs"]),
    ("finetune-batch", config(teacher__finetune__batch_size=0),
     ["x.yaml", "teacher.finetune.batch_size"]),
    ("finetune-lr-zero", config(teacher__finetune__learning_rate=0.0),
     ["x.yaml", "teacher.finetune.learning_rate"]),
    ("finetune-lr-huge", config(teacher__finetune__learning_rate=1e6),
     ["x.yaml", "teacher.finetune.learning_rate"]),
    ("dropout", config(teacher__dropout=1.5), ["x.yaml", "teacher.dropout"]),
    ("teacher-missing", config(teacher__source="./no/such/teacher"),
     ["x.yaml", "teacher.source", "not found"]),
    ("teacher-package", config(teacher__source="package:no_such_pkg_kdplug/model"),
     ["x.yaml", "teacher.source", "not installed"]),
    ("teacher-no-config-json", config(teacher__source="empty_teacher"),
     ["empty_teacher", "config.json"]),
    ("teacher-family-unconverted", config(teacher__source="electra_teacher"),
     ["electra_teacher", "model_type is 'electra'", "save_to_preset"]),
    ("teacher-no-tokenizer-files", config(teacher__source="roberta_teacher"),
     ["roberta_teacher", "no vocab.json and no merges.txt", "roberta"]),
    ("tokenizer-missing", config(teacher__tokenizer="./no/vocab"),
     ["x.yaml", "teacher.tokenizer"]),
    ("pipeline-chunks", config(teacher__pipeline={"length_chunks": 0}),
     ["x.yaml", "teacher.pipeline.length_chunks"]),
    # --------------------------------------------------- method and student
    ("method-unknown", config(method__name="kdd"), ["x.yaml", "method.name", "kd"]),
    ("method-temperature", config(method__temperature=0), ["x.yaml", "temperature"]),
    ("method-alpha", config(method__alpha=2), ["x.yaml", "alpha"]),
    ("method-unknown-option", config(method__temprature=2), ["x.yaml", "method.temprature"]),
    ("student-unknown", config(student={"kind": "tiny"}), ["x.yaml", "student.kind"]),
    ("student-layers", config(student={"kind": "truncated", "num_layers": 0}),
     ["x.yaml", "student"]),
    # ------------------------------------------------ augment, cache, export
    ("augment-not-list", config(augment="tang"), ["x.yaml", "augment"]),
    ("augment-unknown", config(augment=[{"name": "tnag"}]), ["x.yaml", "augment[0].name"]),
    ("augment-n", config(augment=[{"name": "mask", "n": 0}]), ["x.yaml", "augment[0].n"]),
    ("cache-shard", config(cache={"shard_size": 0}), ["x.yaml", "cache.shard_size"]),
    ("cache-dtype", config(cache={"dtype": "int8"}), ["x.yaml", "cache.dtype"]),
    ("latency-zero", config(export={"latency_batch_sizes": [0]}),
     ["x.yaml", "export.latency_batch_sizes[0]"]),
    ("export-format", config(export={"formats": ["onnx"]}), ["x.yaml", "export.formats[0]"]),
    ("latency-runs-zero", config(evaluation={"latency_runs": 0}),
     ["x.yaml", "evaluation.latency_runs"]),
    # ---------------------------------------------------------- data section
    ("data-missing", config(data__path="nope.tsv"), ["nope.tsv", "data.path"]),
    ("max-train-negative", config(data__max_train_examples=-40),
     ["x.yaml", "data.max_train_examples"]),
    ("max-train-zero", config(data__max_train_examples=0),
     ["x.yaml", "data.max_train_examples"]),
    ("sequence-length", config(data__sequence_length=4), ["x.yaml", "data.sequence_length"]),
    ("num-classes", config(data__num_classes=1), ["x.yaml", "data.num_classes"]),
    ("format", config(data__format="xml"), ["x.yaml", "data.format"]),
    ("same-splits", config(data__test_split="train"), ["x.yaml", "data", "train_split"]),
    ("data-path-empty", config(data__path=" "), ["x.yaml", "data"]),
    # ------------------------------------------------------------ data files
    ("single-class-train", data_file(_tsv({
        "train": [(t, 1) for t, _ in ROWS], "dev": ROWS[:2], "test": ROWS[:2]})),
     ["data.tsv", "train split", "two classes"]),
    ("no-label-column", data_file(GOOD_TSV.replace("\tlabel\t", "\tstars\t")),
     ["data.tsv", "'label'", "data.label_column"]),
    ("label-out-of-range", data_file(GOOD_TSV.replace("great acting\t1", "great acting\t5")),
     ["data.tsv:", "5"]),
    ("label-string", data_file(GOOD_TSV.replace("great acting\t1", "great acting\tpos")),
     ["data.tsv:", "pos"]),
    ("empty-text", data_file(GOOD_TSV.replace("great acting\t1", " \t1")),
     ["data.tsv:", "empty text"]),
    ("no-test-rows", data_file(_tsv({"train": ROWS, "dev": ROWS[:2]})),
     ["data.tsv", "data.test_split"]),
    ("no-split-column", data_file(GOOD_TSV.replace("\tsplit", "\tpart")),
     ["data.tsv", "data.split_column"]),
    ("wrong-field-count", data_file(GOOD_TSV.replace("weak plot\t0", "weak\tplot\t0")),
     ["data.tsv:", "fields"]),
    ("binary-data", data_file(b"text\tlabel\tsplit\n\xff\xfe\t1\ttrain\n"),
     ["data.tsv:2", "UTF-8"]),
    ("empty-data", data_file(""), ["data.tsv"]),
    ("bad-jsonl", data_file('{"text": "a", "label": 1, "split": "train"}\n{oops\n',
                            name="data.jsonl"), ["data.jsonl:2", "JSON"]),
    ("unknown-extension", data_file(GOOD_TSV, name="data.txt"),
     ["data.txt", "data.format"]),
    # ------------------------------- data sources and class names (#17)
    ("data-path-and-train", config(data__train="data.tsv"),
     ["x.yaml", "data", "both path and train"]),
    ("data-no-source", config(data__path=DELETE), ["x.yaml", "data", "no data"]),
    ("data-split-file-missing", config(data__path=DELETE, data__train="data.tsv",
                                       data__dev="dev.tsv"),
     ["dev.tsv", "data file not found", "data.dev"]),
    ("data-no-test-no-dev", config(data__validation_split=None, data__test_split=None),
     ["x.yaml", "data", "no test and no validation split"]),
    ("quoted-field-unclosed", data_file(GOOD_TSV.replace("weak plot", '"weak plot')),
     ["data.tsv:", "data.quoting: none"]),
    ("label-name-unknown-in-dev", data_file(_tsv({
        "train": [(t, "pos" if y else "neg") for t, y in ROWS],
        "dev": [("so so", "neutral")], "test": [("fine", "pos")]})),
     ["data.tsv:8", "'neutral'", "known: neg, pos"]),
    ("label-names-inferred-count", data_file(_tsv({
        "train": [(t, f"c{i}") for i, (t, _) in enumerate(ROWS)],
        "dev": ROWS[:2], "test": ROWS[:2]})),
     ["data.tsv", "6 names", "data.num_classes is 2", "data.label_names"]),
    ("label-names-duplicate", config(data__label_names=["pos", "neg", "pos"]),
     ["x.yaml", "data", "label_names lists 'pos' more than once"]),
    ("label-names-vs-num-classes", config(data__label_names=["neg", "pos"],
                                          data__num_classes=3),
     ["x.yaml", "data", "label_names lists 2 classes and num_classes is 3"]),
    ("parquet-without-pyarrow", without_module("pyarrow.parquet", data_file(
        b"PAR1", name="data.parquet")), ["data.parquet", 'pip install "kdplug[parquet]"']),
    ("datasets-without-extra", without_module("datasets", hf_folder(None)),
     ["hf", "data.path", 'pip install "kdplug[datasets]"']),
    ("hf-dataset-no-column", hf_folder({"sentence": ["a", "b"], "label": [0, 1]}),
     ["hf", "no column 'text'", "data.text_column"]),
    # ------------------------------------------- `kdplug run` checks first
    ("run-teacher-missing", run(config(teacher__source="./no/such/teacher")),
     ["x.yaml", "teacher.source"]),
    ("run-single-class", data_file(_tsv({
        "train": [(t, 0) for t, _ in ROWS], "dev": ROWS[:2], "test": ROWS[:2]}),
        command="run"), ["data.tsv", "two classes"]),
    ("run-lr-inf", run(config(training__learning_rate=float("inf"))),
     ["x.yaml", "training.learning_rate"]),
    ("run-cache-env-a-file", _cache_is_a_file,
     ["KDPLUG_CACHE_DIR", "cache", "is a file, not a folder"]),
    ("finetune-cache-dir-a-file", config(teacher__finetune__cache_dir="data.tsv"),
     ["x.yaml", "teacher.finetune.cache_dir", "data.tsv is a file, not a folder"]),
    ("run-output-dir-under-a-file", run(config(output_dir="outputs/results.csv/{name}")),
     ["x.yaml", "output_dir", "results.csv is a file, not a folder"]),
    ("run-output-dir", args("run", "{root}/ok.yaml", "--output-dir", "runs/{nmae}"),
     ["--output-dir", "{nmae}"]),
    # ------------------------------------------------------- early stopping
    ("early-stopping-monitor", config(training__early_stopping={"monitor": "accuracy"}),
     ["x.yaml", "training.early_stopping", "val_accuracy"]),
    ("early-stopping-key", config(training__early_stopping={"patiense": 2}),
     ["x.yaml", "training.early_stopping.patiense", "patience"]),
    ("early-stopping-no-dev", config(training__early_stopping=True,
                                     data__validation_split=None),
     ["x.yaml", "training.early_stopping", "data.validation_split"]),
    ("early-stopping-teacher-stages", config(
        teacher__finetune={"early_stopping": {"stages": ["distill"]}}),
     ["x.yaml", "teacher.finetune", "stages"]),
    # ------------------------------------------------- the analysis section
    ("analysis-unknown-key", config(analysis={"probng": {}}),
     ["x.yaml", "analysis.probng", "probing"]),
    ("analysis-unknown-task", config(analysis={"probing": {"tasks": ["bigram_shfit"]}}),
     ["x.yaml", "analysis.probing.tasks[0]", "bigram_shift"]),
    ("analysis-senteval-missing", config(analysis={"probing": {"tasks": ["p/tense.txt"]}}),
     ["x.yaml", "analysis.probing.tasks[0]", "p/tense.txt", "not found"]),
    ("analysis-corpus-missing", config(analysis={"probing": {"corpus": "wiki.txt"}}),
     ["x.yaml", "analysis.probing.corpus", "wiki.txt"]),
    ("analysis-probe", config(analysis={"probing": {"probe": "svm"}}),
     ["x.yaml", "analysis.probing.probe", "svm"]),
    ("analysis-no-seeds", config(analysis={"probing": {"seeds": []}}),
     ["x.yaml", "analysis.probing", "seeds"]),
    ("analysis-all-off", config(analysis={"probing": False, "behaviour": False}),
     ["x.yaml", "analysis", "nothing to analyse"]),
    ("analysis-bins", config(analysis={"behaviour": {"calibration_bins": 1}}),
     ["x.yaml", "analysis.behaviour.calibration_bins"]),
    ("analysis-no-validation-split",
     config(data__validation_split=None, analysis={"behaviour": {"split": "validation"}}),
     ["x.yaml", "analysis.behaviour.split"]),
    ("analyze-not-a-run", args("analyze", "{root}"), ["no config.yaml"]),
    ("analyze-config-count", args("analyze", "{root}", "{root}", "--config", "{root}/ok.yaml"),
     ["--config", "once per run"]),
    ("analyze-seeds", args("analyze", "{root}", "--seeds", "a,b"), ["--seeds", "a,b"]),
    # ------------------------------------------------------- command line
    ("log-every-zero", args("run", "{root}/ok.yaml", "--log-every", "0"),
     ["--log-every", "'0'"]),
    ("unknown-command", args("trian", "{root}/ok.yaml"), ["trian"]),
    ("cache-rm-nothing", args("cache", "rm"), ["cache rm"]),
    # ---------------------------------------------------------- cache states
    ("cache-rm-not-hex", args("cache", "rm", "../etc"), ["not a cache key", "../etc"]),
    ("cache-rm-unknown", args("cache", "rm", "0123abcd"), ["no cache entry", "0123abcd"]),
    ("cache-rm-foreign", cache_state(_foreign_entry, "cache", "rm", "abcdef01"),
     ["abcdef0123456789", "not created by kdplug"]),
    ("cache-rm-symlink", cache_state(_symlink_entry, "cache", "rm", "0123456789ab"),
     ["0123456789abcdef", "symlink"]),
]


def _snapshot(folder):
    out = {}
    for top, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, folder)
            if os.path.islink(path):
                out[rel] = "-> " + os.readlink(path)
            else:
                out[rel] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def test_there_are_at_least_sixty_cases():
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A config folder with good data and a teacher folder, a sentinel
    working directory full of the user's files, and an empty cache."""
    root = tmp_path / "configs"
    root.mkdir()
    (root / "data.tsv").write_text(GOOD_TSV)
    teacher = root / "teacher"
    teacher.mkdir()
    (teacher / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (teacher / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    (root / "empty_teacher").mkdir()
    (root / "roberta_teacher").mkdir()
    (root / "roberta_teacher" / "config.json").write_text('{"model_type": "roberta"}')
    (root / "electra_teacher").mkdir()
    (root / "electra_teacher" / "config.json").write_text('{"model_type": "electra"}')
    (root / "ok.yaml").write_text(yaml.safe_dump(BASE))
    sentinel = tmp_path / "sentinel"
    sentinel.mkdir()
    (sentinel / "notes.txt").write_text("the user's own file")
    (sentinel / "outputs").mkdir()
    (sentinel / "outputs" / "results.csv").write_text("a,b\n1,2\n")
    monkeypatch.chdir(sentinel)
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "cache"))
    return root, sentinel


def test_the_base_config_is_valid(world, capsys):
    root, _ = world
    assert main(["validate", str(root / "ok.yaml")]) == 0
    out = capsys.readouterr().out
    assert "train 6 (0: 3, 1: 3)" in out and out.rstrip().endswith("ok.yaml: OK")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_error(case, world, capsys):
    name, make, expected = case
    root, sentinel = world
    argv = make(root)
    before = _snapshot(sentinel)
    try:
        code = main(argv)
    except SystemExit as e:  # argparse errors exit through SystemExit
        code = e.code
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("kdplug: error:")]
    assert code == 2, err
    assert len(errors) == 1, err
    assert "Traceback" not in err
    for text in expected:
        assert text in errors[0], f"{text!r} not in {errors[0]!r}"
    assert _snapshot(sentinel) == before  # nothing outside the cache changed
    assert not (root / "runs").exists() and not (sentinel / "runs").exists()


def test_rows_in_no_split_are_one_warning_line_not_an_error(world, capsys):
    root, _ = world
    (root / "data.tsv").write_text(GOOD_TSV + "typo row\t1\tvalid\n")
    assert main(["validate", str(root / "ok.yaml")]) == 0
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if "warning" in line.lower()]
    assert line.startswith("kdplug: warning: ") and line.endswith(
        "data.tsv: rows in none of the splits used, not read: 1 with "
        "split='valid' (first: line 12) (the splits used: data.train_split "
        "'train', data.validation_split 'dev', data.test_split 'test')")
