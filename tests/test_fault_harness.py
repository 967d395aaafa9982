"""What a fault harness found (issue #51, items 9-12): data loss, silent
wrong results, crashes and misleading messages, each case checked as a
user meets it.

The first table holds inputs that must be refused as the bad inputs of
tests/test_bad_inputs.py are: exit status 2, one `kdplug: error:` line
naming the file and the field, no traceback, the user's files unchanged
(that file's `world` and its check are reused). The second holds inputs
that must now work (exit 0, no traceback). The cases that need a model, a
killed process or a full disk follow, one test each.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from test_bad_inputs import GOOD_TSV
from test_bad_inputs import config
from test_bad_inputs import data_file
from test_bad_inputs import run
from test_bad_inputs import test_bad_input_is_one_clear_error as one_clear_error
from test_bad_inputs import world  # noqa: F401  (the fixture)

from kdplug import storage
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.errors import ConfigError
from kdplug.errors import TrainingError
from kdplug.run.run_folder import RunFolder
from kdplug.run.run_folder import run_settings
from kdplug.testing import write_tiny_preset
from kdplug.testing.toy_config import write_toy_config


def fresh(make):
    """`make`'s `kdplug run` with `--fresh`."""
    return lambda root: run(make)(root) + ["--fresh"]


def working_run_folder(make):
    """`make`, run from a working folder that is itself a kdplug run folder."""
    def in_run_folder(root):
        RunFolder(os.getcwd()).record({"seed": 0})
        return make(root)
    return in_run_folder


LONG_TEXT = "word " * 40_000  # 200,000 characters, over csv's default limit
_ROWS = [line.split("\t") for line in GOOD_TSV.splitlines()[1:]]
# the text column again at the end (last wins in a dict: the labels would
# describe the other column's texts)
TWO_TEXT_COLUMNS = "text\tlabel\tsplit\ttext\n" + "".join(
    f"{t}\t{y}\t{s}\t{t} again\n" for t, y, s in _ROWS)
TWO_TEXT_KEYS = "".join(
    f'{{"text": {json.dumps(t)}, "label": {y}, "split": "{s}", "text": "other"}}\n'
    for t, y, s in _ROWS)

# (id, builder, substrings the error line must contain)
REFUSED = [
    # ------------------------------------------- 9: no user file overwritten
    ("run-into-a-folder-of-user-files", run(config(output_dir="outputs")),
     ["x.yaml: output_dir: ", "outputs holds files kdplug did not write (results.csv)",
      "not a kdplug run folder", "a new or empty folder"]),
    ("fresh-on-a-folder-of-user-files", fresh(config(output_dir="outputs")),
     ["x.yaml: output_dir: ", "results.csv", "--fresh moves only kdplug run folders"]),
    ("run-into-the-working-folder", run(config(output_dir=".")),
     ["x.yaml: output_dir: ", "notes.txt, outputs", "not a kdplug run folder"]),
    ("fresh-on-the-working-folder", working_run_folder(fresh(config(output_dir="."))),
     ["x.yaml: output_dir: ", "--fresh would move", "the working folder"]),
    # ------------------------------------------- 10: no column read by guess
    ("duplicated-column", data_file(TWO_TEXT_COLUMNS),
     ["data.tsv:1: ", "the column 'text' appears twice (columns 1 and 4)"]),
    ("duplicated-json-key", data_file(TWO_TEXT_KEYS, name="data.jsonl"),
     ["data.jsonl:1: ", "key 'text' appears twice"]),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_with_one_clear_error(case, world, capsys):  # noqa: F811
    one_clear_error(case, world, capsys)


def _symlink_in_entry(root):
    """A kdplug cache entry holding a dangling symlink."""
    entry = os.path.join(os.environ["KDPLUG_CACHE_DIR"], "teachers", "0123456789abcdef")
    storage.mark_entry(entry, "teacher", "0123456789abcdef")
    os.symlink(os.path.join(entry, "gone"), os.path.join(entry, "dangling"))
    return []


def cache_command(*argv):
    return lambda root: _symlink_in_entry(root) + ["cache", *argv]


# (id, builder, exit status, what stdout must contain)
ACCEPTED = [
    ("text-over-131072-characters", data_file(
        GOOD_TSV.replace("great acting", LONG_TEXT)), 0, "train 6 (0: 3, 1: 3)"),
    ("quoted-text-over-131072-characters", data_file(
        GOOD_TSV.replace("great acting", f'"{LONG_TEXT}"')), 0, "x.yaml: OK"),
    ("cache-ls-dangling-symlink", cache_command("ls"), 0, "0123456789abcdef  partial"),
    ("cache-rm-all-dangling-symlink", cache_command("rm", "--all"), 0,
     "removed teacher 0123456789abcdef"),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted_without_a_traceback(case, world, capsys):  # noqa: F811
    _, make, code, expected = case
    root, _ = world
    assert main(make(root)) == code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "error" not in err, err
    assert expected in out


def test_a_plugin_raising_a_base_exception_at_import_fails_alone(
        world, monkeypatch, tmp_path, capsys):  # noqa: F811
    import importlib.metadata

    from kdplug.plugin import manager

    (tmp_path / "kdplug_test_base_exception.py").write_text(
        "class Abort(BaseException):\n    pass\n\nraise Abort('not today')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    installed = importlib.metadata.entry_points(group=manager.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [
        *installed, importlib.metadata.EntryPoint(
            "aborts", "kdplug_test_base_exception", manager.ENTRY_POINT_GROUP)])
    monkeypatch.setattr(manager, "_default", None)  # loaded again, then put back
    root, _ = world
    assert main(["plugins"]) == 1  # one plugin failed
    out = capsys.readouterr().out
    assert "aborts" in out and "failed" in out and "Abort: not today" in out
    assert main(["validate", str(root / "ok.yaml")]) == 0  # every command still works


def test_a_teacher_replaced_in_place_is_a_changed_run(tmp_path):
    path = write_toy_config(tmp_path, {"name": "kd"}, num_examples=40)
    folder = RunFolder(tmp_path / "runs" / "toy")
    settings = run_settings(load_config(path))
    folder.record(settings)
    (tmp_path / "runs" / "toy" / "stages").mkdir()
    (tmp_path / "runs" / "toy" / "stages" / "01-distill.weights.h5").write_bytes(b"x")
    folder.check(run_settings(load_config(path)))  # the same teacher: reused
    write_tiny_preset(tmp_path / "teacher", seed=7)  # other weights, same path
    with pytest.raises(ConfigError) as e:
        folder.check(run_settings(load_config(path)), path)
    assert "teacher_file_content.teacher.source: " in str(e.value)
    assert "--fresh" in str(e.value)


@pytest.mark.slow
def test_a_nan_teacher_checkpoint_is_named_broken_before_training(
        tmp_path, monkeypatch, capsys):
    import keras_hub

    teacher = write_tiny_preset(tmp_path / "teacher", classifier=True)
    task = keras_hub.models.TextClassifier.from_preset(teacher)
    task.set_weights([np.full_like(w, np.nan) for w in task.get_weights()])
    task.save_to_preset(teacher)
    path = write_toy_config(tmp_path, {"name": "kd"}, num_examples=40,
                            teacher={"source": teacher, "finetune": None})
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if line.startswith("kdplug: error:")]
    assert "toy.yaml: teacher.source: the teacher gives NaN or Inf outputs before " \
           "any training" in line
    assert "the checkpoint is broken" in line and "learning rate fixes" in line
    assert "Lower training.learning_rate" not in err
    assert not (tmp_path / "runs" / "toy" / "stages").exists()


def test_the_nan_stop_names_a_backup_only_when_there_is_one(tmp_path):
    from kdplug.training.callbacks import StopOnNaN

    backup = tmp_path / "backup" / "01-distill"
    for exists in (False, True):
        if exists:
            backup.mkdir(parents=True)
            (backup / "backup.json").write_text("{}")
        stop = StopOnNaN("distill", str(backup))
        stop.set_model(type("M", (), {"stop_training": False})())
        with pytest.raises(TrainingError) as e:
            stop.on_train_batch_end(0, {"loss": float("nan")})
        assert (str(backup) in str(e.value)) is exists, str(e.value)


# A full disk in a subprocess: the file size limit (`ulimit -f`) stops
# every write past 4 KB with EFBIG (Python ignores SIGXFSZ).
DISK_FULL = textwrap.dedent("""
    import json, os, resource, sys
    import numpy as np
    from kdplug import storage, testing
    model = testing.tiny_bert_classifier(num_layers=1)
    model(testing.toy_batch(2)[0])
    folder = sys.argv[1]
    writers = {
        "a.weights.h5": lambda p: storage.save_weights(model, p),
        "a.keras": lambda p: storage.save_model(model, p),
        "a.json": lambda p: storage.write_json(p, {"x": "y" * 10000}),
        "a.npz": lambda p: storage.write_npz(p, {"x": np.zeros(10000)}),
    }
    for name in writers:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(b"the previous version")
    resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))
    for name, write in writers.items():
        try:
            write(os.path.join(folder, name))
            print(json.dumps([name, "written"]))
        except Exception as e:
            print(json.dumps([name, type(e).__name__, str(e)]), flush=True)
""")


@pytest.mark.slow
def test_a_full_disk_is_one_clear_line_naming_the_file(tmp_path):
    done = subprocess.run([sys.executable, "-c", DISK_FULL, str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]  # no SIGSEGV (-11)
    assert "h5py" not in done.stderr and "Traceback" not in done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r[0] for r in results] == ["a.weights.h5", "a.keras", "a.json", "a.npz"]
    for name, kind, message in results:
        assert kind == "StorageError", (name, kind, message)
        assert message == (f"cannot write {tmp_path / name}: File too large (over the "
                           "file size limit: ulimit -f); nothing half-written is left "
                           "there")
        assert (tmp_path / name).read_bytes() == b"the previous version"
    assert sorted(os.listdir(tmp_path)) == sorted(r[0] for r in results)  # no temporaries


# An export killed while TensorFlow writes the SavedModel's files.
KILLED_EXPORT = textwrap.dedent("""
    import os, sys
    from kdplug import testing
    from kdplug.evaluation.export import StudentExporter
    model = testing.tiny_bert_classifier(num_layers=1)
    model(testing.toy_batch(2)[0])

    def killed(self, path, text):  # TensorFlow has written part of the folder
        os.makedirs(os.path.join(path, "variables"))
        with open(os.path.join(path, "saved_model.pb"), "wb") as f:
            f.write(b"half")
        os._exit(9)

    StudentExporter._write_saved_model = killed
    StudentExporter(model, sequence_length=12).export(sys.argv[1], ["saved_model"])
""")


@pytest.mark.slow
def test_a_killed_export_leaves_no_saved_model_to_keep(tmp_path):
    from kdplug import testing
    from kdplug.evaluation.export import StudentExporter

    out = tmp_path / "export"
    done = subprocess.run([sys.executable, "-c", KILLED_EXPORT, str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 9, done.stderr[-3000:]
    assert not (out / "saved_model").exists()  # `kdplug export` would keep it
    [left] = os.listdir(out)
    assert left.startswith(".saved_model" + storage.TMP_MARK)
    model = testing.tiny_bert_classifier(num_layers=1)
    model(testing.toy_batch(2)[0])
    StudentExporter(model, sequence_length=12).export(str(out), ["saved_model"])
    assert os.listdir(out) == ["saved_model"]  # the killed one's temporary removed
    assert (out / "saved_model" / "saved_model.pb").stat().st_size > 1000


@pytest.mark.slow
def test_serve_text_reads_special_tokens_as_training_does(tmp_path):
    """A literal [CLS] / [SEP] / [MASK] in a text: the exported `serve_text`
    gives the logits of the ids training feeds the student (the run's
    `TextEncoder` with the tokenizer `load_teacher` gives), within a
    tolerance far below what reading those tokens the other way changes."""
    import tensorflow as tf

    from kdplug import testing
    from kdplug.config.sections import TeacherConfig
    from kdplug.data import Examples
    from kdplug.data import TextEncoder
    from kdplug.evaluation.export import StudentExporter
    from kdplug.teacher.loading import load_teacher

    source = write_tiny_preset(tmp_path / "teacher")
    _, tokenizer, _ = load_teacher(TeacherConfig(source=source), 2)
    texts = ["a fine [MASK] film", "[CLS] dull plot [SEP] great acting", "fun [SEP]"]
    student = testing.tiny_bert_classifier(
        vocabulary_size=tokenizer.vocabulary_size(), seed=3)
    noise = np.random.default_rng(0)  # logits that differ clearly between texts
    student.set_weights([w + noise.normal(0, 0.3, w.shape).astype(w.dtype)
                         for w in student.get_weights()])
    trained_on = TextEncoder(tokenizer, 12).encode_examples(Examples(texts, [0, 1, 0]))
    expected = np.asarray(student(trained_on, training=False))
    exporter = StudentExporter(student, sequence_length=12, tokenizer=tokenizer)
    exporter.export(str(tmp_path / "export"), ["saved_model"])
    served = tf.saved_model.load(exporter.paths["saved_model"]).signatures[
        "serve_text"](text=tf.constant(texts))["output_0"].numpy()
    tolerance = 1e-5
    np.testing.assert_allclose(served, expected, atol=tolerance)
    # the same texts with "[SEP]" read as the word pieces "[", "sep", "]"
    plain = type(tokenizer).from_config(dict(
        tokenizer.get_config(), special_tokens_in_strings=False,
        vocabulary=tokenizer.get_vocabulary()))
    other = np.asarray(student(TextEncoder(plain, 12)(tf.constant(texts)), training=False))
    assert np.abs(other - expected).max() > 100 * tolerance


@pytest.mark.slow
def test_a_truncated_student_keras_is_trained_again_with_a_warning(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "cache"))
    path = write_toy_config(
        tmp_path, {"name": "kd"}, num_examples=40, teacher={"finetune": None},
        student={"kind": "truncated", "layers": [1]},
        training={"epochs": 1, "batch_size": 8}, export=False)
    assert main(["run", path]) == 0
    student = tmp_path / "runs" / "toy" / "student.keras"
    whole = student.read_bytes()
    student.write_bytes(whole[:len(whole) // 2])  # a disk that filled up, a cut copy
    capsys.readouterr()
    assert main(["run", path]) == 0  # not BadZipFile on every re-run
    err = capsys.readouterr().err
    assert f"stage distill: its weights were {student}, which is damaged (" in err
    assert "training it again" in err and "Traceback" not in err
    assert "stage distill: done" in err
    assert storage.unreadable(str(student)) is None  # whole again
