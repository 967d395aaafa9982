"""BERT -> seq2seq benchmark (issue #19): the same student trained with
maximum likelihood only and with C-MLM distillation, over seeds.

    python bench/seq2seq.py                   # seeds 0,1,2 of configs/cmlm_seq2seq.yaml
    python bench/seq2seq.py --seeds 3
    python bench/seq2seq.py --render-only     # rebuild the section from stored results
    python bench/seq2seq.py --smoke           # tiny preset + toy pairs, about a minute
    python bench/seq2seq.py --gpu             # let the runs use a GPU
    python bench/seq2seq.py --teacher-epochs 3 --epochs 3   # a session's budget
    python bench/seq2seq.py --set student.hidden_dim=128    # any field changed
    python bench/seq2seq.py --temperatures 1,2,10 --alphas 0.5,0.2   # a sweep
    python bench/seq2seq.py --list            # the planned runs, estimated
    python bench/seq2seq.py --config configs/cmlm_seq2seq_pos.yaml   # POS tagging

Each seed is one `kdplug run` of `configs/cmlm_seq2seq.yaml` (punctuation
restoration built from movie_snippets, `data/punct_restore.md`) with
`seed: <s>` and `teacher.finetune.seed: 0`: the C-MLM teacher is fine-tuned
once and its top-K soft labels extracted once (both cached), and every run
trains the MLE-only student and the distilled student (`mle_baseline`) with
the same seed and budget, then decodes the test split. Results accumulate in
`bench/results/seq2seq.json` keyed `seed<s>` (a stored seed is not run
again unless `--force`); the "seq2seq" section of `docs/results.md` is
rewritten after every seed: BLEU and exact match (mean ± sample standard
deviation over seeds), the per-seed gain of distillation and the verdict on
the paper's claim from those paired gains (`gain_verdict`, by the rule of
`bench/verdicts.py`; corpus BLEU has no test-set term), the teacher's
cost (fine-tuning and soft-label time, soft-label size), its masked-token
accuracy under random masks on test and under the soft labels' own masks
(train and dev), and the students' decoding speed.

Every BLEU stands beside the copy-the-source baseline: the test sources
emitted unchanged, scored with the same BLEU and reference normalisation
(`copy_source_scores`; each run reports it, and for an entry stored without
it the section computes it from the data file). A budget whose MLE student
does not beat copying (by `verdicts.compare`, or its mean below copy) does
not judge the paper's claim: its section says so instead of a verdict.

`--temperatures` / `--alphas` sweep `method.temperature` / `method.alpha`
(their product, each point a run per seed): a point other than the
config's (T 10, alpha 0.5) adds its fields to the `--set` hash of its key
(the config's point keeps the key of a run without a sweep, so stored runs
count). The MLE-only student depends on neither, so one run per seed and
budget trains it (the config's point when swept, else the first point
not stored) and the others train the distilled student alone
(`method.mle_baseline: false`), paired with that sibling's MLE student:
the runner gives every student of a run the same batches from the same
seed, so a distilled-only run trains what it would beside the MLE one.
The section has one table per budget, a row per (T, alpha), and per row
the paired gain over the MLE student with its verdict. `--list` prints the
planned runs with estimates from the stored runs' wall times.

`--teacher-epochs` / `--epochs` shrink the C-MLM fine-tuning and the
students' training below the config's (10 and 10): the config's budget
takes about six hours of two CPU cores per seed, more than a bench run
should take. `--set FIELD=VALUE` (repeatable) changes any other field
of the config, e.g. a smaller student that learns in fewer CPU hours
(`--set student.hidden_dim=128 --set training.learning_rate=1e-3`); the
value is read as YAML and kdplug validates the field as in any config. A
shrunk or changed budget is part of a result's key
(`seed<s>-teacher<T>-epochs<E>`, plus `-set<hash>` of the changed fields)
and of its entry (`budget`); the section has one table and one verdict per
budget, never averaging across budgets.

`--config PATH` runs another task's config in the same recipe (default
`configs/cmlm_seq2seq.yaml`); `configs/cmlm_seq2seq_pos.yaml` is
part-of-speech tagging as generation (`data/pos_tags.md`: words -> their
UPOS tags), where copying the source scores 0 BLEU, so its MLE student can
clear the floor that punctuation restoration's copy (70.27 BLEU) sets. A
result's entry records its `config`; the key of a config other than the
default starts with its name (`cmlm_seq2seq_pos-seed0-teacher3-epochs3`,
run `seq2seq-cmlm_seq2seq_pos-s0-teacher3-epochs3`), while the default's
keep the keys of the results stored before the option (an entry without
`config` ran the default). Stored runs, `--list` and the teacher's cost
count only those of the same config; the section has one table per
(config, budget), the default's first.
"""

import argparse
import dataclasses
import functools
import hashlib
import json
import os
import statistics
import sys

import yaml

import verdicts  # bench/ is the script's folder
from benchlib import ROOT
from benchlib import Job
from benchlib import add_write_docs_argument
from benchlib import campaign_paths
from benchlib import load_results
from benchlib import machine
from benchlib import machine_text
from benchlib import mean_sd_cell
from benchlib import parse_seeds
from benchlib import prepare_run_dir
from benchlib import run_config
from benchlib import run_jobs
from benchlib import save_results
from benchlib import write_config
from benchlib import write_marked_section
from kdplug.errors import KdplugError
from kdplug.evaluation.report import resumed_text
from kdplug.run_files import METRICS

# The default task's config (`--config`): its results keep keys without a
# config part, as every result stored before `--config` existed.
DEFAULT_CONFIG = "configs/cmlm_seq2seq.yaml"
CONFIG = os.path.join(ROOT, DEFAULT_CONFIG)
# What each bundled task's data file is, for the section's text.
TASKS = {"punct_restore.tsv": "punctuation restoration built from movie_snippets "
                              "(`data/punct_restore.md`)",
         "pos_tags.tsv": "part-of-speech tagging as generation (words -> their "
                         "universal POS tags) built from movie_tokens "
                         "(`data/pos_tags.md`)"}
TITLE = "## BERT -> seq2seq: C-MLM distillation vs maximum likelihood"
VARIANTS = {"mle": "student, MLE only", "cmlm_kd": "student + C-MLM distillation"}
# Fields each seed's config sets itself (or an option sets): not for --set.
OWN_FIELDS = {"name": "the seed's run name", "seed": "--seeds",
              "output_dir": "--run-root", "export": "the bench (no export)",
              "teacher.finetune.seed": "the bench (one teacher for every seed)",
              "teacher.finetune.epochs": "--teacher-epochs",
              "training.epochs": "--epochs",
              "method.mle_baseline": "the bench (both students, or one per sweep)",
              "method.temperature": "--temperatures",
              "method.alpha": "--alphas"}
# The swept fields: each (T, alpha) point is a row of its budget's table.
SWEEP_FIELDS = ("method.temperature", "method.alpha")
COPY = "copy the source (no model)"


def config_name(path):
    """`configs/x.yaml`: a config's path relative to the repository (with
    `/`), or absolute where it lies outside it; what an entry's `config`
    records. A relative `path` is the working folder's where a file is
    there, else the repository's."""
    path = os.path.abspath(path if os.path.exists(path) else os.path.join(ROOT, path))
    relative = os.path.relpath(path, ROOT)
    return path if relative.startswith("..") else relative.replace(os.sep, "/")


def args_config(args):
    """The config the options name (`--config`), `DEFAULT_CONFIG` where
    they have none."""
    return getattr(args, "config", None) or DEFAULT_CONFIG


def run_config_path(entry):
    """The config a stored entry ran (`DEFAULT_CONFIG` for one stored
    before entries recorded it)."""
    return entry.get("config") or DEFAULT_CONFIG


def config_tag(config):
    """The part of a result's key that names its config: empty for
    `DEFAULT_CONFIG` (the keys of results stored before `--config`),
    `cmlm_seq2seq_pos` for `configs/cmlm_seq2seq_pos.yaml`, the path's
    letters and digits for a config outside `configs/`.

    >>> config_tag("configs/cmlm_seq2seq_pos.yaml")
    'cmlm_seq2seq_pos'
    """
    config = config_name(config)
    if config == DEFAULT_CONFIG:
        return ""
    folder, file = os.path.split(os.path.splitext(config)[0])
    text = file if folder == "configs" else os.path.splitext(config)[0]
    return "".join(c if c.isalnum() or c in "_." else "_" for c in text).strip("_")


@functools.lru_cache(maxsize=8)
def _config_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_config_doc(config=DEFAULT_CONFIG):
    """The document of `config` (a path relative to the repository or
    absolute), a fresh copy to change."""
    return yaml.safe_load(_config_text(os.path.join(ROOT, config)))


def budget(args):
    """`{"teacher_epochs": T, "epochs": E, "set": {field: value}}` of
    `--teacher-epochs`, `--epochs` and `--set` (only those given), `{}` for
    the config's budget."""
    shrunk = {k: v for k, v in (("teacher_epochs", getattr(args, "teacher_epochs", None)),
                                ("epochs", getattr(args, "epochs", None))) if v is not None}
    changed = getattr(args, "set", None)
    if changed:
        shrunk["set"] = dict(sorted(changed.items()))
    return shrunk


def config_point(config=DEFAULT_CONFIG):
    """`(T, alpha)` of a config (configs/cmlm_seq2seq.yaml by default): the
    sweep point whose runs keep the key of a run without a sweep."""
    method = load_config_doc(config)["method"]
    return float(method["temperature"]), float(method["alpha"])


def sweep_points(args):
    """`[(T, alpha)]`: `--temperatures` x `--alphas` (the config's value of
    the one not given), the config's point first when it is one of them.

    Examples:

    ```python
    sweep_points(parse_args(["--temperatures", "1,10"]))  # [(10.0, 0.5), (1.0, 0.5)]
    ```
    """
    config = config_point(args_config(args))
    points = [(t, a) for a in getattr(args, "alphas", None) or [config[1]]
              for t in getattr(args, "temperatures", None) or [config[0]]]
    return sorted(points, key=lambda point: point != config)  # stable


def point_budget(args, point):
    """`budget(args)` of one sweep point: its fields in the budget's `set`
    where they differ from the config's, so the config's point has the key
    and budget of a run without a sweep.

    Args:
        args: the parsed options.
        point: `(T, alpha)`.
    """
    shrunk = budget(args)
    changed = {field: value for field, value, config in zip(
        SWEEP_FIELDS, point, config_point(args_config(args))) if value != config}
    if changed:
        shrunk["set"] = dict(sorted({**shrunk.get("set", {}), **changed}.items()))
    return shrunk


def split_budget(shrunk, config=DEFAULT_CONFIG):
    """`(budget, (T, alpha))` of a stored budget: the sweep's fields taken
    out of its `set` (the values of the entry's `config` where absent), the
    rest the budget whose table the entry is a row of.

    >>> split_budget({"epochs": 3, "set": {"method.temperature": 2.0}})
    ({'epochs': 3}, (2.0, 0.5))
    """
    shrunk = dict(shrunk or {})
    changed = dict(shrunk.pop("set", None) or {})
    point = tuple(float(changed.pop(field, value))
                  for field, value in zip(SWEEP_FIELDS, config_point(config)))
    if changed:
        shrunk["set"] = changed
    return shrunk, point


def result_key(seed, shrunk, config=DEFAULT_CONFIG):
    """`seed0` for the config's budget, `seed0-teacher3-epochs3` for a
    shrunk one (`budget`), `...-set<8 hex digits>` when fields are changed
    (a hash of the sorted `field: value` pairs); a `config` other than
    `DEFAULT_CONFIG` prefixes its `config_tag`
    (`cmlm_seq2seq_pos-seed0-...`)."""
    tag = config_tag(config)
    parts = ([tag] if tag else []) + [f"seed{seed}"]
    if "teacher_epochs" in shrunk:
        parts.append(f"teacher{shrunk['teacher_epochs']}")
    if "epochs" in shrunk:
        parts.append(f"epochs{shrunk['epochs']}")
    if shrunk.get("set"):
        text = json.dumps(shrunk["set"], sort_keys=True)
        parts.append("set" + hashlib.sha256(text.encode()).hexdigest()[:8])
    return "-".join(parts)


def parse_set(text):
    """`("student.hidden_dim", 128)` from `student.hidden_dim=128` (the value
    read as YAML, `1e-3` as a number); ValueError for a missing `=` or a
    field the bench sets."""
    field, sep, value = text.partition("=")
    field = field.strip()
    if not sep or not field:
        raise ValueError(f"--set {text!r}: expected FIELD=VALUE, e.g. "
                         "student.hidden_dim=128")
    if field in OWN_FIELDS:
        raise ValueError(f"--set {field}: set by {OWN_FIELDS[field]}")
    value = yaml.safe_load(value)
    if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            pass
    return field, value


def apply_set(doc, changed, config=DEFAULT_CONFIG):
    """`doc` with each dotted `field` of `changed` set (sections copied, not
    changed in place); ValueError when a field's parent is not a section
    (of `config`, the file the message names)."""
    for field, value in changed.items():
        *parents, last = field.split(".")
        node = doc
        for depth, key in enumerate(parents):
            if not isinstance(node.get(key), dict):
                raise ValueError(f"--set {field}: {'.'.join(parents[:depth + 1])} "
                                 f"is not a section of {config}")
            node[key] = dict(node[key])
            node = node[key]
        node[last] = value
    return doc


def run_name(seed, shrunk, config=DEFAULT_CONFIG):
    """`seq2seq-s0-teacher3-epochs3` (`seq2seq-cmlm_seq2seq_pos-s0-...`
    for another config): a run's name, its folder's and its config file's."""
    tag = config_tag(config)
    key = result_key(seed, shrunk).replace("seed", "s", 1)
    return "-".join(["seq2seq"] + ([tag] if tag else []) + [key])


def build_doc(seed, args, smoke=None, point=None, mle=True):
    """The config of one seed: `--config` (configs/cmlm_seq2seq.yaml by
    default; or the smoke config) with the seed, the shared teacher seed,
    the budget, the sweep `point` `(T, alpha)` (None: the config's or
    `--set`'s), whether it trains the MLE-only student too (`mle`) and the
    run folder."""
    config = args_config(args)
    doc = load_config_doc(config) if smoke is None else smoke
    shrunk = budget(args) if point is None else point_budget(args, point)
    doc = apply_set(dict(doc), shrunk.get("set", {}), config)
    doc = dict(doc, name=run_name(seed, shrunk, config),
               seed=seed, output_dir=os.path.join(args.run_root, "{name}"))
    doc["teacher"] = dict(doc["teacher"])
    doc["teacher"]["finetune"] = dict(doc["teacher"]["finetune"], seed=0)
    if "teacher_epochs" in shrunk:
        doc["teacher"]["finetune"]["epochs"] = shrunk["teacher_epochs"]
    if "epochs" in shrunk:
        doc["training"] = dict(doc["training"], epochs=shrunk["epochs"])
    doc["method"] = dict(doc["method"], mle_baseline=bool(mle))
    doc["export"] = False
    return doc


def smoke_doc(folder, config=DEFAULT_CONFIG):
    """A tiny preset and toy source/target pairs (reversed word order) in
    `config`'s recipe."""
    from kdplug import testing

    os.makedirs(folder, exist_ok=True)
    preset = os.path.join(folder, "teacher")
    if not os.path.isdir(preset):
        testing.write_tiny_preset(preset, num_layers=2, hidden_dim=16)
    data = os.path.join(folder, "pairs.tsv")
    words = ["a", "fine", "film", "dull", "plot", "great", "acting", "weak"]
    with open(data, "w", encoding="utf-8") as f:
        f.write("source\ttarget\tsplit\n")
        for i in range(90):
            sentence = [words[(i * 3 + k) % len(words)] for k in range(2 + i % 3)]
            split = "train" if i < 60 else ("dev" if i < 75 else "test")
            f.write(f"{' '.join(sentence)}\t{' '.join(reversed(sentence))}\t{split}\n")
    doc = load_config_doc(config)
    doc["data"].update(path=data, sequence_length=24)
    doc["teacher"] = {"source": preset, "dropout": 0.0, "finetune": {
        "epochs": 1, "batch_size": 16, "learning_rate": 3e-3}}
    doc["method"].update(max_source_length=8, max_target_length=8, passes=2,
                         beam_width=2)
    doc["student"].update(hidden_dim=16, num_heads=2, intermediate_dim=32,
                          num_encoder_layers=1, num_decoder_layers=1)
    doc["training"].update(epochs=1, batch_size=16, jit_compile=False, verbose=0)
    return doc


def summarise(seed, report, wall_s, args, shrunk=None):
    """The stored entry of one run's report (`shrunk`: its budget,
    `budget(args)` by default; a sweep point's from `point_budget`)."""
    teacher = report["teacher"]
    seconds = report.get("seconds", {})
    masked = teacher.get("masked_accuracy") or {}
    return {
        "seed": seed,
        "config": args_config(args),
        "budget": budget(args) if shrunk is None else shrunk,
        "variants": {name: {k: report["variants"][name][k] for k in (
            "bleu", "exact_match", "token_accuracy", "perplexity", "params",
            "decode_sentences_per_s")} for name in VARIANTS if name in report["variants"]},
        "alpha": report.get("alpha"),
        "copy_source": report.get("copy_source"),
        # random mask_rate masks on the test targets
        "teacher_masked_accuracy": teacher["accuracy"],
        # the soft labels' own masks, on the splits they come from
        "teacher_soft_label_accuracy": masked.get("soft_label_masks"),
        "teacher_soft_label_top_k_recall": teacher["soft_labels"].get("top_k_recall"),
        "teacher_seed": teacher.get("seed"),  # what the teacher's masks follow
        "teacher_finetune_s": (teacher.get("finetune") or {}).get("seconds"),
        "teacher_finetune_cached": bool((teacher.get("finetune") or {}).get("cached")),
        # a fine-tuning that resumed a killed one: its seconds are a share
        "teacher_finetune_resumed_at_epoch": (teacher.get("finetune") or {}).get(
            "resumed_at_epoch"),
        "soft_labels_s": seconds.get("teacher soft labels"),
        "soft_labels_bytes": teacher["soft_labels"].get("bytes"),
        "soft_labels": {k: teacher["soft_labels"][k] for k in (
            "passes", "top_k", "temperature")},
        "train_s": {name: seconds.get(f"stage {name}") for name in VARIANTS},
        "test_examples": report["task"].get("test_examples"),
        "decoding": report.get("decoding"),
        "wall_s": wall_s,
        "machine": machine(gpu_hidden=not args.gpu and not args.smoke),
        "smoke": bool(args.smoke),
    }


def render(results, smoke=False, copy_source=None):
    """The section: per budget, the copy-the-source baseline, the MLE
    student and a row per sweep point (T, alpha), the verdicts, the
    teacher's accuracy and cost, the decoding.

    Args:
        results: the results file's content.
        smoke: render the smoke run's entries (and only those).
        copy_source: `fn(entry) -> {"bleu", "exact_match"} or None`, the
            baseline of an entry (default `copy_source_of`: its own, else
            computed from the data file).
    """
    copy_source = copy_source or copy_source_of
    entries = [dict(e, copy_source=copy_source(e)) for _, e in sorted(
        stored_entries(results, smoke).items(), key=lambda item: (item[1]["seed"], item[0]))]
    others = sorted({run_config_path(e) for e in entries} - {DEFAULT_CONFIG})
    lines = [TITLE, ""]
    if smoke:
        lines += ["**Smoke run** (tiny random teacher, toy pairs): the numbers "
                  "mean nothing.", ""]
    lines += ["Generated by `python bench/seq2seq.py` from `bench/results/seq2seq.json` "
              "(do not edit by hand). Task: punctuation restoration built from "
              "movie_snippets (`data/punct_restore.md`); teacher: MiniLM-L6 fine-tuned "
              "as a conditional masked LM (cached, one teacher for every seed); the "
              "two students share seed, architecture and budget "
              "(`configs/cmlm_seq2seq.yaml`). BLEU (keras-hub's corpus BLEU, x100) "
              "and exact match on the test split; mean ± sample standard deviation "
              "over seeds.", "",
              "Copying the source unchanged, scored with the same BLEU against the "
              "same normalised references, is the floor a student must clear: a "
              "budget whose MLE student does not clear it does not judge the "
              "paper's claim. Rows (T, alpha) of one budget share its MLE student "
              "(it depends on neither: trained once per seed, every distilled row "
              "paired with it).", "",
              verdicts.rule_text() + " BLEU is a corpus score with no per-sentence "
              "variance here, so these rows have no test-set term (their test column "
              "says so): the seeds' spread alone. The first row of each verdict table is that "
              "floor, a precondition rather than a claim of the paper: *established* "
              "where the bounds lie above copying, *ruled out* where they lie below.",
              ""]
    if others:
        lines += ["Other tasks, each in its own tables (headed by its config): "
                  + "; ".join(f"{task_text(c)}, `{c}`" for c in others)
                  + ". The recipe is the same, with its own data and sequence "
                  "lengths; results of different configs are never averaged or "
                  "paired.", ""]
    if not entries:
        return "\n".join(lines + ["Not run yet.", ""])
    # configs/cmlm_seq2seq.yaml's first, then the others'; per config, its
    # own budget first, then the shrunk ones
    groups = {}
    for e in entries:
        config = run_config_path(e)
        shrunk = split_budget(e.get("budget"), config)[0]
        groups.setdefault((config != DEFAULT_CONFIG, config, bool(shrunk),
                           budget_text(shrunk, config)), []).append(e)
    for (other, config, _, text), group in sorted(groups.items()):
        heading = (f"### Task: {task_name(config)} (`{config}`); budget: {text}" if other
                   else f"### Budget: {text}")
        lines += [heading, ""] + render_budget(
            group, [e for e in entries if run_config_path(e) == config])
    machines = sorted({machine_text(e["machine"]) for e in entries})
    lines += [f"Machine: {m}." for m in machines] + [""]
    return "\n".join(lines)


def task_data(config):
    """The file name of a config's `data.path` (None where it has none)."""
    try:
        path = load_config_doc(config)["data"].get("path")
    except (OSError, KeyError, TypeError, AttributeError, yaml.YAMLError):
        return None
    return os.path.basename(path) if path else None


def task_text(config):
    """What a config's task is (`TASKS`), else its data file."""
    data = task_data(config)
    return TASKS.get(data) or (f"the pairs of `{data}`" if data else "its data")


def task_name(config):
    """A task's short name for a heading: `part-of-speech tagging as
    generation`."""
    return task_text(config).split(" built from ")[0].split(" (")[0]


def copy_source_of(entry):
    """The copy-the-source baseline `{"bleu", "exact_match"}` of a stored
    entry: the one its run reported, else (an entry stored before runs
    reported it) computed from its config's data, tokenizer and lengths
    (configs/cmlm_seq2seq.yaml's for an entry that records no config) with
    the entry's `--set` fields (it depends on nothing
    trained); None for a smoke entry without one (its toy data lives in its
    run folder) and where the data or the tokenizer cannot be read.

    Args:
        entry: a stored result.
    """
    if entry.get("copy_source"):
        return entry["copy_source"]
    if entry.get("smoke"):
        return None
    config = run_config_path(entry)
    try:
        doc = apply_set(load_config_doc(config),
                        split_budget(entry.get("budget"), config)[0].get("set", {}), config)
        method = doc["method"]
        return dict(_copy_source_from_data(json.dumps({
            "config": config, "data": doc["data"], "teacher": doc["teacher"]["source"],
            "method": {k: method[k] for k in ("source_column", "target_column",
                                              "max_source_length", "max_target_length")},
        }, sort_keys=True)))
    except (ImportError, OSError, KdplugError) as error:  # no data or tokenizer here
        print(f"copy-the-source baseline of seed {entry.get('seed')}: not computed "
              f"({error})", file=sys.stderr)
        return None


@functools.lru_cache(maxsize=8)
def _copy_source_from_data(text):
    """`copy_source_scores` of the test split a config's `data`, teacher
    tokenizer and method lengths give (`text`: them as JSON), computed once
    per process."""
    import keras_hub

    from kdplug.config import config_from_dict
    from kdplug.teacher import resolve_source
    from kdplug_plugins.cmlm_seq2seq.seq2seq_data import Seq2SeqData
    from kdplug_plugins.cmlm_seq2seq.seq2seq_encoder import Seq2SeqEncoder
    from kdplug_plugins.cmlm_seq2seq.text_metrics import copy_source_scores

    parts = json.loads(text)
    path = parts.get("config", DEFAULT_CONFIG)
    doc = apply_set(load_config_doc(path), {
        "data": parts["data"], "teacher.source": parts["teacher"],
        **{f"method.{k}": v for k, v in parts["method"].items()}}, path)
    config = config_from_dict(doc, file=os.path.join(ROOT, path))
    mcfg = config.method_config
    data = Seq2SeqData.read(config.data, mcfg.source_column, mcfg.target_column,
                            config.resolve_path, config.seed)
    tokenizer = keras_hub.models.Tokenizer.from_preset(
        resolve_source(config.teacher.source, config.resolve_path))
    encoder = Seq2SeqEncoder(tokenizer, mcfg.max_source_length, mcfg.max_target_length,
                             config.data.sequence_length)
    return tuple(copy_source_scores(*data.splits["test"], encoder.normalize).items())


def budget_text(shrunk, config=DEFAULT_CONFIG):
    """`teacher at most 3 epochs, students 3 epochs (shrunk from the
    config's 10 and 10 ...)` for a stored `budget` ("changed from" when it
    trains longer or changes fields), the config's own epochs
    (read from `config`, configs/cmlm_seq2seq.yaml by default) for `{}`."""
    base = load_config_doc(config)
    config = (base["teacher"]["finetune"]["epochs"], base["training"]["epochs"])
    teacher = shrunk.get("teacher_epochs", config[0])
    students = shrunk.get("epochs", config[1])
    text = f"teacher at most {teacher} epochs, students {students} epochs"
    if not shrunk:
        return f"the config's ({text})"
    changed = shrunk.get("set") or {}
    if changed:
        text += "; " + ", ".join(f"{field} = {value}" for field, value in changed.items())
    # "shrunk" only where it is true: --epochs 12 or a --set is a change
    smaller = not changed and teacher <= config[0] and students <= config[1]
    return (f"{text} ({'shrunk' if smaller else 'changed'} from the config's "
            f"{config[0]} and {config[1]} to fit a few CPU hours per seed)")


def render_budget(entries, every_entry=()):
    """The table (copy, MLE, a row per sweep point), the verdicts, the
    teacher's accuracy and cost and the decoding of the entries run with
    one config and budget (`every_entry`: those of every budget of the
    config, where the teacher's cost is found when this budget's runs
    found it cached)."""
    mle = mle_entries(entries)
    points = {}
    for e in entries:
        if "cmlm_kd" in e["variants"]:
            points.setdefault(split_budget(e.get("budget"), run_config_path(e))[1],
                              []).append(e)
    order = sorted(points, key=lambda point: (-point[1], point[0]))
    lines = ["| student | T | alpha | BLEU | exact match | token accuracy | perplexity | "
             "decoding (sentences/s) | training (s) | seeds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    copies = [e["copy_source"] for e in entries if e.get("copy_source")]
    lines.append(f"| {COPY} | – | – | "
                 + (f"{mean_sd_cell(unique(c['bleu'] for c in copies), 2)} | "
                    f"{mean_sd_cell(unique(100 * c['exact_match'] for c in copies), 2)}% | "
                    if copies else "not known | – | ")
                 + "– | – | – | – | – |")
    if mle:
        lines.append(variant_row(VARIANTS["mle"], "–", "0", list(mle.values()), "mle"))
    for t, alpha in order:
        lines.append(variant_row(VARIANTS["cmlm_kd"], f"{t:g}", f"{alpha:g}",
                                 points[(t, alpha)], "cmlm_kd"))
    lines += [""] + judgement(mle, {point: points[point] for point in order})
    lines += ["", teacher_text(entries, every_entry), ""]
    decodings = sorted({decoding_text(e.get("decoding")) for e in entries})
    return lines + [f"Decoding: {', '.join(decodings)}.", ""]


def unique(values):
    """The distinct values (to 4 decimals) of a quantity every seed shares,
    such as the copy baseline: one cell, not a spread of zero."""
    return sorted({round(v, 4) for v in values})


def variant_row(label, temperature, alpha, rows, name):
    """One student's row of a budget's table: the means over the seeds of
    `rows` (entries) of variant `name`."""
    v = [e["variants"][name] for e in rows]
    return (f"| {label} | {temperature} | {alpha} | "
            f"{mean_sd_cell([x['bleu'] for x in v], 2)} | "
            f"{mean_sd_cell([100 * x['exact_match'] for x in v], 2)}% | "
            f"{mean_sd_cell([x['token_accuracy'] for x in v], 4)} | "
            f"{mean_sd_cell([x['perplexity'] for x in v], 2)} | "
            f"{mean_sd_cell([x['decode_sentences_per_s'] for x in v], 1)} | "
            f"{mean_sd_cell([(e['train_s'] or {}).get(name) or 0.0 for e in rows], 0)} | "
            f"{', '.join(str(e['seed']) for e in rows)} |")


def mle_entries(entries):
    """`{seed: entry}` of the entries (of one config) that trained the
    MLE-only student, one per seed: the run at the config's sweep point
    where there is one (its key sorts first among a seed's), else the
    first."""
    found = {}
    for e in sorted(entries, key=lambda e: split_budget(e.get("budget"), run_config_path(e))[1]
                    != config_point(run_config_path(e))):
        if "mle" in e["variants"]:
            found.setdefault(e["seed"], e)
    return dict(sorted(found.items()))


# the copy floor is a precondition, not one of the paper's claims
FLOOR_WORDS = {"reproduced": "established", "not reproduced": "ruled out"}


def judgement(mle, points):
    """The verdict table of one budget and what it means: "MLE student >
    copying the source" first; where that is not established (by
    `verdicts.compare`, or the MLE mean is not above copy) every row
    "distilled > MLE" reads **not judged** (its paired gain and interval
    still shown), else its verdict (`gain_verdict`).

    Args:
        mle: `mle_entries(...)`.
        points: `{(T, alpha): [entries]}` of the distilled students.
    """
    mle_bleu = {s: e["variants"]["mle"]["bleu"] for s, e in mle.items()}
    copy_bleu = {s: e["copy_source"]["bleu"] for s, e in mle.items() if e.get("copy_source")}
    if not mle_bleu:
        return ["No MLE-only student at this budget yet: the gains have nothing to "
                "pair with."]
    rows, beats = [], None
    if set(copy_bleu) == set(mle_bleu):
        beats = verdicts.compare(mle_bleu, copy_bleu, scale=verdicts.BLEU)
        floor = FLOOR_WORDS.get(beats.result, beats.result)
        rows.append((["MLE student > copying the source", per_seed(mle_bleu, copy_bleu)],
                     dataclasses.replace(beats, result=floor)))
    above = beats is not None and beats.effect > 0
    judged = above and beats.result in ("reproduced", "pending")
    for (t, alpha), group in points.items():
        kd = {e["seed"]: e["variants"]["cmlm_kd"]["bleu"] for e in group
              if e["seed"] in mle_bleu}
        verdict = gain_verdict(kd, {s: mle_bleu[s] for s in kd})
        if not judged:
            verdict = dataclasses.replace(verdict, result="not judged")
        rows.append(([f"C-MLM distillation (T {t:g}, alpha {alpha:g}) > MLE",
                      per_seed(kd, mle_bleu)], verdict))
    lines = verdicts.table(rows, ["claim", "per seed (BLEU)"]) + [""]
    mean = statistics.fmean(mle_bleu.values())
    if beats is None:
        return lines + ["The copy-the-source baseline is not known for these runs: "
                        "**the paper's claim is not judged** at this budget."]
    copy = mean_sd_cell(unique(copy_bleu.values()), 2)
    if above and not judged:  # above copying, not established (inconclusive)
        return lines + [
            f"The MLE student is above copying the source "
            f"({mean_sd_cell(mle_bleu.values(), 2)} against {copy} BLEU) but its lead "
            f"is not established at {len(mle_bleu)} seed(s) (p {beats.p_cell()}): "
            "**the paper's claim is not judged** until it is; the gains over the "
            "MLE student are shown with their intervals."]
    if not judged:
        return lines + [
            f"**The MLE student does not beat copying the source** "
            f"({mean_sd_cell(mle_bleu.values(), 2)} against {copy} BLEU): at this "
            "budget a student trained on the gold targets alone scores no higher than "
            "emitting its input unchanged, so it has not learnt the task and **the paper's "
            "claim is not judged here**; the gains over the MLE student are shown "
            "with their intervals, not judged."]
    if beats.result == "pending":
        return lines + [f"The MLE student is above copying the source ({mean:.2f} "
                        f"against {copy} BLEU) on too few seeds to establish it; "
                        "the verdicts wait for the seeds."]
    return lines + [f"The MLE student beats copying the source ({mean:.2f} against "
                    f"{copy} BLEU): this budget judges the paper's claim, C-MLM "
                    "distillation > MLE, in the rows below the first."]


def per_seed(better, worse):
    """`+2.00, +1.50` (BLEU), `better - worse` per seed both have."""
    return ", ".join(f"{better[s] - worse[s]:+.2f}" for s in sorted(better)
                     if s in worse) or "–"


def teacher_text(entries, every_entry):
    """The teacher's line: its masked-token accuracy under random masks on
    the test targets and under the soft labels' own masks (train and dev),
    its fine-tuning and soft-label cost."""
    first = entries[0]
    soft = first["soft_labels"]
    cost, elsewhere = teacher_cost(entries, every_entry)
    config = run_config_path(first)
    shrunk = split_budget(first.get("budget"), config)[0]
    rate = apply_set(load_config_doc(config), shrunk.get("set", {}),
                     config)["method"]["mask_rate"]
    accuracies = unique(e["teacher_masked_accuracy"] for e in entries)
    text = (f"Teacher: masked-token accuracy with random {rate:.0%} masks on the test "
            f"targets {', '.join(f'{a:.4f}' for a in accuracies)}")
    if len(accuracies) > 1 and any(e.get("teacher_seed") is None for e in entries):
        text += (" (one per run: runs that recorded no teacher seed drew these masks "
                 "from their own seed, not `teacher.finetune.seed`)")
    own = next((e for e in entries if e.get("teacher_soft_label_accuracy")), None)
    masks = (f"with the soft labels' own masks ({soft['passes']} passes, each masking "
             f"one in {soft['passes']} target positions)")
    if own is None:
        text += f"; {masks}: not recorded by these runs"
    else:
        names = {"train": "train", "validation": "dev"}
        accuracy = own["teacher_soft_label_accuracy"]
        recall = own.get("teacher_soft_label_top_k_recall") or {}
        text += (f"; {masks}: "
                 + ", ".join(f"{names.get(k, k)} {v:.4f}" for k, v in accuracy.items())
                 + f" (gold among the top {soft['top_k']}: "
                 + ", ".join(f"{names.get(k, k)} {v:.3f}" for k, v in recall.items()) + ")")
    resumed = cost.get("teacher_finetune_resumed_at_epoch")
    share = (f" ({resumed_text(resumed)} of a killed run: this run's part only)"
             if resumed else "")
    return (text + f". C-MLM fine-tuning {(cost['teacher_finetune_s'] or 0):.0f} s{share}; soft "
            f"labels ({soft['passes']} passes, top {soft['top_k']}) "
            f"{(cost['soft_labels_s'] or 0):.0f} s and "
            f"{(first['soft_labels_bytes'] or 0) / 2**20:.1f} MiB (train + dev, "
            "int32 ids + float16 probabilities)"
            + (f"; both cached for these runs, the times are those of the run that "
               f"computed them (seed {cost['seed']}, students "
               f"{cost['budget'].get('epochs')} epochs)" if elsewhere else "")
            + ".")


def teacher_cost(entries, every_entry):
    """`(entry, elsewhere)`: the entry whose run fine-tuned the teacher and
    computed its soft labels, so its times are their cost: one of
    `entries`, else (`elsewhere` True) one of `every_entry` with the same
    teacher budget and soft-label settings (the cache is shared across
    student budgets), else the first of `entries` (its times then are a
    cache hit's)."""
    fresh = sorted((e for e in entries if not e["teacher_finetune_cached"]),
                   key=resumed_teacher)
    if fresh:
        return fresh[0], False

    def teacher_of(e):
        return (e.get("budget") or {}).get("teacher_epochs"), e["soft_labels"]

    shared = sorted((e for e in every_entry if not e["teacher_finetune_cached"]
                     and teacher_of(e) == teacher_of(entries[0])), key=resumed_teacher)
    return (shared[0], True) if shared else (entries[0], False)


def resumed_teacher(entry):
    """Whether `entry`'s run finished a killed run's C-MLM fine-tuning (its
    seconds then are a share: a whole fine-tuning's entry is preferred)."""
    return bool(entry.get("teacher_finetune_resumed_at_epoch"))


def gain_verdict(distilled, mle):
    """The `verdicts.Verdict` of the paper's claim, C-MLM distillation >
    MLE in BLEU, from `{seed: BLEU}` of the distilled and the MLE-only
    students (a seed's two students share seed, batches and budget:
    paired). No test-set term: corpus BLEU has no binomial variance and the
    results keep no per-sentence outputs for a bootstrap.

    Args:
        distilled: `{seed: BLEU}` of the distilled students.
        mle: `{seed: BLEU}` of the MLE-only students.
    """
    return verdicts.compare(distilled, mle, scale=verdicts.BLEU)


def decoding_text(decoding):
    """`beam 5, length penalty 0.6` from a report's `decoding`."""
    if not decoding:
        return "not recorded"
    if decoding["strategy"] == "greedy":
        return "greedy"
    return (f"beam {decoding['beam_width']}, length penalty "
            f"{decoding.get('length_penalty', 0.0):g}")


def stored_entries(results, smoke, shrunk=None, config=None):
    """`{key: entry}` of the results that did not fail, of the smoke run or
    not (`smoke`), of the config `config` (None: every config) and of the
    budget `shrunk` (any sweep point; None: every budget).

    Args:
        results: the results file's content.
        smoke: bool.
        shrunk: a budget without the sweep's fields, or None.
        config: a config's path as entries record it (`config_name`), or
            None.
    """
    return {key: e for key, e in results.get("results", {}).items()
            if "error" not in e and bool(e.get("smoke")) == bool(smoke)
            and (config is None or run_config_path(e) == config)
            and (shrunk is None
                 or split_budget(e.get("budget"), run_config_path(e))[0] == shrunk)}


def plan(args, results):
    """`[(seed, point, mle)]` in run order: per seed, every sweep point
    (`sweep_points`); `mle` for the one run per seed that also trains the
    MLE-only student, the first point not stored when no stored entry of
    the seed and budget has one (with `--force` every stored entry is run
    again, so the first point). The MLE student depends on neither T nor
    alpha, so the other points train the distilled student alone.

    Args:
        args: the parsed options.
        results: the results file's content.
    """
    config = args_config(args)
    stored = {} if args.force else stored_entries(results, args.smoke, budget(args), config)
    todo = []
    for seed in args.seed_list:
        done = {key: e for key, e in stored.items() if e["seed"] == seed}
        has_mle = any("mle" in e.get("variants", {}) for e in done.values())
        for point in sweep_points(args):
            kept = result_key(seed, point_budget(args, point), config) in done
            todo.append((seed, point, not has_mle and not kept))
            has_mle = has_mle or not kept
    return todo


def estimate_s(entries, variants):
    """Wall seconds of a run training `variants` with the teacher and its
    soft labels cached, from stored `entries` of its budget (any sweep
    point: T and alpha do not change a step's cost): each variant's mean
    training and decoding time, plus the mean rest of a run (reading the
    data, loading the teacher and soft labels) over the runs that found the
    teacher cached; None without such a run.

    Args:
        entries: stored results of the budget.
        variants: `["mle", "cmlm_kd"]` or `["cmlm_kd"]`.
    """
    def decode_s(e, name):
        return e["test_examples"] / e["variants"][name]["decode_sentences_per_s"]

    def student_s(e, name):
        return (e.get("train_s") or {}).get(name, 0.0) + decode_s(e, name)

    warm = [e for e in entries if e["teacher_finetune_cached"] and e.get("wall_s")
            and not e.get("resumed")]
    if not warm:
        return None
    rest = statistics.fmean(e["wall_s"] - sum(student_s(e, v) for v in e["variants"])
                            for e in warm)
    total = rest
    for name in variants:
        times = ([student_s(e, name) for e in entries if name in e["variants"]]
                 or [student_s(e, v) for e in entries for v in e["variants"]])
        total += statistics.fmean(times)
    return total


def plan_text(args, results):
    """`--list`: the planned runs in order, each stored or estimated
    (`estimate_s`), the teacher's cost where it is not cached, the total."""
    shrunk, config = budget(args), args_config(args)
    stored = list(stored_entries(results, args.smoke, shrunk, config).values())
    lines = [f"Config: {config}; task: {task_text(config)}",
             f"Budget: {budget_text(shrunk, config)}", ""]
    total, unknown = 0.0, 0
    for seed, point, mle in plan(args, results):
        key = result_key(seed, point_budget(args, point), config)
        entry = results.get("results", {}).get(key)
        if entry and "error" not in entry and not args.force:
            mle, status = "mle" in entry["variants"], "stored"
        else:
            seconds = estimate_s(stored, ["mle", "cmlm_kd"] if mle else ["cmlm_kd"])
            total += seconds or 0.0
            unknown += seconds is None
            status = (f"~{seconds / 60:.0f} min" if seconds is not None
                      else "no stored run of this budget to estimate from")
        what = "MLE + distilled" if mle else "distilled only (MLE of a sibling run)"
        lines.append(f"  {key}  T {point[0]:g}, alpha {point[1]:g}: {what}: {status}")
    # the teacher's cache is shared by every student budget of its own
    cold = [e for e in stored_entries(results, args.smoke, config=config).values()
            if not e["teacher_finetune_cached"] and not resumed_teacher(e)
            and (e.get("budget") or {}).get("teacher_epochs") == shrunk.get("teacher_epochs")]
    cpus = ", ".join(sorted({str(e["machine"].get("cpus")) for e in stored})) or "?"
    teacher = (f"C-MLM fine-tuning ~{cold[0]['teacher_finetune_s'] / 60:.0f} min and soft "
               f"labels ~{cold[0]['soft_labels_s'] / 60:.0f} min" if cold else
               "not measured at this budget")
    lines += ["", f"To run: ~{total / 3600:.1f} h"
              + (f" and {unknown} run(s) not estimated" if unknown else "")
              + f", wall time on the machine that stored the runs ({cpus} CPU cores); "
              f"plus, once, where this machine's cache lacks them, the teacher: {teacher}."]
    return "\n".join(lines)


def parse_floats(parser, option, text, low, high):
    """`"1,2,10"` -> `[1.0, 2.0, 10.0]`, each in `(low, high]`; anything
    else is `parser.error` naming `option`."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        parser.error(f"{option}: expected numbers, got {text!r}")
    bad = [v for v in values if not low < v <= high]
    if bad or not values:
        parser.error(f"{option}: each value must be in ({low:g}, {high:g}], got {text!r}")
    return list(dict.fromkeys(values))


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench/seq2seq.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=DEFAULT_CONFIG, metavar="PATH",
                        help="the task's config (default configs/cmlm_seq2seq.yaml; "
                             "configs/cmlm_seq2seq_pos.yaml: POS tagging)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--results")
    add_write_docs_argument(parser, always="docs/results.md")
    parser.add_argument("--run-root")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--timeout", type=float)
    parser.add_argument("--teacher-epochs", type=int,
                        help="C-MLM fine-tuning epochs (default: the config's)")
    parser.add_argument("--epochs", type=int,
                        help="each student's epochs (default: the config's)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="change a field of the config (repeatable), e.g. "
                             "student.hidden_dim=128")
    parser.add_argument("--temperatures", metavar="T,T,...",
                        help="sweep method.temperature, e.g. 1,2,10 (default: the "
                             "config's)")
    parser.add_argument("--alphas", metavar="A,A,...",
                        help="sweep method.alpha, e.g. 0.5,0.2 (default: the config's)")
    parser.add_argument("--list", action="store_true",
                        help="print the planned runs and their estimated time, run nothing")
    args = parser.parse_args(argv)
    args.config = config_name(args.config)
    if not os.path.isfile(os.path.join(ROOT, args.config)):
        parser.error(f"--config {args.config}: no such file")
    args.seed_list = parse_seeds(parser, args.seeds)
    if args.temperatures is not None:
        args.temperatures = parse_floats(parser, "--temperatures", args.temperatures,
                                         0.0, float("inf"))
    if args.alphas is not None:
        args.alphas = parse_floats(parser, "--alphas", args.alphas, 0.0, 1.0)
    try:
        args.set = dict(parse_set(text) for text in args.set)
    except ValueError as error:
        parser.error(str(error))
    return args


def main(argv=None):
    args = parse_args(argv)
    results_path, out = campaign_paths(args, "seq2seq")
    results = load_results(results_path)
    write = lambda: write_marked_section(  # noqa: E731
        out, "seq2seq", render(results, smoke=args.smoke))
    if args.list:
        print(plan_text(args, results))
        return 0
    if args.render_only:
        write()
        print(f"wrote {out}")
        return 0
    smoke = (smoke_doc(os.path.join(args.run_root, "assets"), args.config)
             if args.smoke else None)
    jobs = [job(seed, args, smoke, point, mle) for seed, point, mle in plan(args, results)]
    failures = run_jobs(jobs, results, lambda: save_results(results_path, results),
                        write, force=args.force)
    print(f"results: {results_path}\nMarkdown: {out}")
    return 1 if failures else 0


def job(seed, args, smoke=None, point=None, mle=True):
    """The `benchlib.Job` of one seed (and sweep `point`, training the
    MLE-only student too with `mle`): its config written and its run folder
    readied (a killed run resumes: finished stages, the teacher's epochs)
    when it starts; in this process with `--smoke`."""
    shrunk = budget(args) if point is None else point_budget(args, point)
    doc = build_doc(seed, args, smoke, point, mle)
    config_path = os.path.join(args.config_dir, f"{doc['name']}.yaml")
    run_dir = os.path.join(args.run_root, doc["name"])

    def run():
        return run_config(config_path, os.path.join(run_dir, METRICS),
                          os.path.join(args.run_root, f"{doc['name']}.log"),
                          in_process=args.smoke, timeout=args.timeout, gpu=args.gpu)

    return Job(result_key(seed, shrunk, args_config(args)), run,
               summarise=lambda report, wall: summarise(seed, report, wall, args, shrunk),
               describe=lambda e: ", ".join(f"{name} BLEU {v['bleu']:.2f}"
                                            for name, v in e["variants"].items()),
               failure={"seed": seed, "smoke": bool(args.smoke)},
               prepare=lambda: prepare_run_dir(
                   run_dir, write_config(doc, config_path)))


if __name__ == "__main__":
    sys.exit(main())
