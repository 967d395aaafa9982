"""BERT -> seq2seq benchmark (issue #19): the same student trained with
maximum likelihood only and with C-MLM distillation, over seeds.

    python bench/seq2seq.py                   # seeds 0,1,2 of configs/cmlm_seq2seq.yaml
    python bench/seq2seq.py --seeds 3
    python bench/seq2seq.py --render-only     # rebuild the section from stored results
    python bench/seq2seq.py --smoke           # tiny preset + toy pairs, about a minute
    python bench/seq2seq.py --gpu             # let the runs use a GPU
    python bench/seq2seq.py --teacher-epochs 3 --epochs 3   # a session's budget
    python bench/seq2seq.py --set student.hidden_dim=128    # any field changed

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
cost (fine-tuning and soft-label time, soft-label size) and the students'
decoding speed.

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
"""

import argparse
import hashlib
import json
import os
import sys

import yaml

import verdicts  # bench/ is the script's folder
from benchlib import ROOT
from benchlib import Job
from benchlib import add_write_docs_argument
from benchlib import campaign_paths
from benchlib import load_base
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
from kdplug.run_files import METRICS

CONFIG = os.path.join(ROOT, "configs", "cmlm_seq2seq.yaml")
TITLE = "## BERT -> seq2seq: C-MLM distillation vs maximum likelihood"
VARIANTS = {"mle": "student, MLE only", "cmlm_kd": "student + C-MLM distillation"}
# Fields each seed's config sets itself (or an option sets): not for --set.
OWN_FIELDS = {"name": "the seed's run name", "seed": "--seeds",
              "output_dir": "--run-root", "export": "the bench (no export)",
              "teacher.finetune.seed": "the bench (one teacher for every seed)",
              "teacher.finetune.epochs": "--teacher-epochs",
              "training.epochs": "--epochs",
              "method.mle_baseline": "the bench (both students)"}


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


def result_key(seed, shrunk):
    """`seed0` for the config's budget, `seed0-teacher3-epochs3` for a
    shrunk one (`budget`), `...-set<8 hex digits>` when fields are changed
    (a hash of the sorted `field: value` pairs)."""
    parts = [f"seed{seed}"]
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


def apply_set(doc, changed):
    """`doc` with each dotted `field` of `changed` set (sections copied, not
    changed in place); ValueError when a field's parent is not a section."""
    for field, value in changed.items():
        *parents, last = field.split(".")
        node = doc
        for depth, key in enumerate(parents):
            if not isinstance(node.get(key), dict):
                raise ValueError(f"--set {field}: {'.'.join(parents[:depth + 1])} "
                                 "is not a section of configs/cmlm_seq2seq.yaml")
            node[key] = dict(node[key])
            node = node[key]
        node[last] = value
    return doc


def build_doc(seed, args, smoke=None):
    """The config of one seed: configs/cmlm_seq2seq.yaml (or the smoke
    config) with the seed, the shared teacher seed, the budget and the run
    folder."""
    doc = load_base("cmlm_seq2seq") if smoke is None else smoke
    shrunk = budget(args)
    doc = apply_set(dict(doc), shrunk.get("set", {}))
    doc = dict(doc, name="seq2seq-" + result_key(seed, shrunk).replace("seed", "s", 1),
               seed=seed, output_dir=os.path.join(args.run_root, "{name}"))
    doc["teacher"] = dict(doc["teacher"])
    doc["teacher"]["finetune"] = dict(doc["teacher"]["finetune"], seed=0)
    if "teacher_epochs" in shrunk:
        doc["teacher"]["finetune"]["epochs"] = shrunk["teacher_epochs"]
    if "epochs" in shrunk:
        doc["training"] = dict(doc["training"], epochs=shrunk["epochs"])
    doc["method"] = dict(doc["method"], mle_baseline=True)
    doc["export"] = False
    return doc


def smoke_doc(folder):
    """A tiny preset and toy source/target pairs (reversed word order)."""
    import yaml

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
    doc = yaml.safe_load(open(CONFIG, encoding="utf-8"))
    doc["data"].update(path=data, sequence_length=24)
    doc["teacher"] = {"source": preset, "dropout": 0.0, "finetune": {
        "epochs": 1, "batch_size": 16, "learning_rate": 3e-3}}
    doc["method"].update(max_source_length=8, max_target_length=8, passes=2,
                         beam_width=2)
    doc["student"].update(hidden_dim=16, num_heads=2, intermediate_dim=32,
                          num_encoder_layers=1, num_decoder_layers=1)
    doc["training"].update(epochs=1, batch_size=16, jit_compile=False, verbose=0)
    return doc


def summarise(seed, report, wall_s, args):
    teacher = report["teacher"]
    seconds = report.get("seconds", {})
    return {
        "seed": seed,
        "budget": budget(args),
        "variants": {name: {k: report["variants"][name][k] for k in (
            "bleu", "exact_match", "token_accuracy", "perplexity", "params",
            "decode_sentences_per_s")} for name in VARIANTS if name in report["variants"]},
        "teacher_masked_accuracy": teacher["accuracy"],
        "teacher_finetune_s": (teacher.get("finetune") or {}).get("seconds"),
        "teacher_finetune_cached": bool((teacher.get("finetune") or {}).get("cached")),
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


def render(results, smoke=False):
    entries = sorted((e for e in results.get("results", {}).values()
                      if "error" not in e and bool(e.get("smoke")) == bool(smoke)),
                     key=lambda e: e["seed"])
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
              "over seeds.", ""]
    if not entries:
        return "\n".join(lines + ["Not run yet.", ""])
    groups = {}  # the config's budget first, then the shrunk ones
    for e in entries:
        shrunk = e.get("budget") or {}
        groups.setdefault((bool(shrunk), budget_text(shrunk)), []).append(e)
    for (_, text), group in sorted(groups.items()):
        lines += [f"### Budget: {text}", ""] + render_budget(group, entries)
    machines = sorted({machine_text(e["machine"]) for e in entries})
    lines += [f"Machine: {m}." for m in machines] + [""]
    return "\n".join(lines)


def budget_text(shrunk):
    """`teacher at most 3 epochs, students 3 epochs (shrunk from the
    config's 10 and 10 ...)` for a stored `budget` ("changed from" when it
    trains longer or changes fields), the config's own epochs
    (read from configs/cmlm_seq2seq.yaml) for `{}`."""
    base = load_base("cmlm_seq2seq")
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
    """The table, paired gains and verdict, teacher cost and decoding of the
    entries run with one budget (`every_entry`: those of every budget, where
    the teacher's cost is found when this budget's runs found it cached)."""
    lines = ["| student | BLEU | exact match | token accuracy | perplexity | "
             "decoding (sentences/s) | training (s) | seeds |",
             "|---|---|---|---|---|---|---|---|"]
    for name, label in VARIANTS.items():
        rows = [e for e in entries if name in e["variants"]]
        if not rows:
            continue
        v = [e["variants"][name] for e in rows]
        lines.append(
            f"| {label} | {mean_sd_cell([x['bleu'] for x in v], 2)} | "
            f"{mean_sd_cell([100 * x['exact_match'] for x in v], 2)}% | "
            f"{mean_sd_cell([x['token_accuracy'] for x in v], 4)} | "
            f"{mean_sd_cell([x['perplexity'] for x in v], 2)} | "
            f"{mean_sd_cell([x['decode_sentences_per_s'] for x in v], 1)} | "
            f"{mean_sd_cell([e['train_s'][name] or 0.0 for e in rows], 0)} | "
            f"{', '.join(str(e['seed']) for e in rows)} |")
    paired = [e for e in entries if set(VARIANTS) <= set(e["variants"])]
    if paired:
        gains = [e["variants"]["cmlm_kd"]["bleu"] - e["variants"]["mle"]["bleu"]
                 for e in paired]
        lines += ["", f"Distillation minus MLE, per seed: "
                  + ", ".join(f"{g:+.2f}" for g in gains) + f" BLEU (mean {mean_sd_cell(gains, 2)})."
                  f" The paper's gain (C-MLM distillation > MLE): {gain_verdict(paired).text()}."]
    first = entries[0]
    cost, elsewhere = teacher_cost(entries, every_entry)
    accuracies = sorted({round(e["teacher_masked_accuracy"], 4) for e in entries})
    lines += ["", "Teacher: masked-token accuracy on the test targets "
              f"{', '.join(f'{a:.4f}' for a in accuracies)}; C-MLM fine-tuning "
              f"{(cost['teacher_finetune_s'] or 0):.0f} s; soft labels "
              f"({first['soft_labels']['passes']} passes, top "
              f"{first['soft_labels']['top_k']}) "
              f"{(cost['soft_labels_s'] or 0):.0f} s and "
              f"{(first['soft_labels_bytes'] or 0) / 2**20:.1f} MiB (train + dev, "
              "int32 ids + float16 probabilities)"
              + (f"; both cached for these runs, the times are those of the run that "
                 f"computed them (seed {cost['seed']}, students "
                 f"{cost['budget'].get('epochs')} epochs)" if elsewhere else "")
              + ".", ""]
    decodings = sorted({decoding_text(e.get("decoding")) for e in entries})
    return lines + [f"Decoding: {', '.join(decodings)}.", ""]


def teacher_cost(entries, every_entry):
    """`(entry, elsewhere)`: the entry whose run fine-tuned the teacher and
    computed its soft labels, so its times are their cost: one of
    `entries`, else (`elsewhere` True) one of `every_entry` with the same
    teacher budget and soft-label settings (the cache is shared across
    student budgets), else the first of `entries` (its times then are a
    cache hit's)."""
    fresh = [e for e in entries if not e["teacher_finetune_cached"]]
    if fresh:
        return fresh[0], False

    def teacher_of(e):
        return (e.get("budget") or {}).get("teacher_epochs"), e["soft_labels"]

    shared = [e for e in every_entry if not e["teacher_finetune_cached"]
              and teacher_of(e) == teacher_of(entries[0])]
    return (shared[0], True) if shared else (entries[0], False)


def gain_verdict(entries):
    """The `verdicts.Verdict` of the paper's claim, C-MLM distillation >
    MLE in BLEU, from entries that ran both students (a seed's two students
    share seed, data order and budget: paired). No test-set term: corpus
    BLEU has no binomial variance and the results keep no per-sentence
    outputs for a bootstrap."""
    bleu = lambda name: {e["seed"]: e["variants"][name]["bleu"]  # noqa: E731
                         for e in entries}
    return verdicts.compare(bleu("cmlm_kd"), bleu("mle"), scale=verdicts.BLEU)


def decoding_text(decoding):
    """`beam 5, length penalty 0.6` from a report's `decoding`."""
    if not decoding:
        return "not recorded"
    if decoding["strategy"] == "greedy":
        return "greedy"
    return (f"beam {decoding['beam_width']}, length penalty "
            f"{decoding.get('length_penalty', 0.0):g}")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench/seq2seq.py",
                                     description=__doc__.split("\n\n")[0])
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
    args = parser.parse_args(argv)
    args.seed_list = parse_seeds(parser, args.seeds)
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
    if args.render_only:
        write()
        print(f"wrote {out}")
        return 0
    smoke = smoke_doc(os.path.join(args.run_root, "assets")) if args.smoke else None
    jobs = [job(seed, args, smoke) for seed in args.seed_list]
    failures = run_jobs(jobs, results, lambda: save_results(results_path, results),
                        write, force=args.force)
    print(f"results: {results_path}\nMarkdown: {out}")
    return 1 if failures else 0


def job(seed, args, smoke=None):
    """The `benchlib.Job` of one seed: its config written and its run folder
    readied (a killed run resumes: finished stages, the teacher's epochs)
    when it starts; in this process with `--smoke`."""
    doc = build_doc(seed, args, smoke)
    config_path = os.path.join(args.config_dir, f"{doc['name']}.yaml")
    run_dir = os.path.join(args.run_root, doc["name"])

    def run():
        return run_config(config_path, os.path.join(run_dir, METRICS),
                          os.path.join(args.run_root, f"{doc['name']}.log"),
                          in_process=args.smoke, timeout=args.timeout, gpu=args.gpu)

    return Job(result_key(seed, budget(args)), run,
               summarise=lambda report, wall: summarise(seed, report, wall, args),
               describe=lambda e: ", ".join(f"{name} BLEU {v['bleu']:.2f}"
                                            for name, v in e["variants"].items()),
               failure={"seed": seed, "smoke": bool(args.smoke)},
               prepare=lambda: prepare_run_dir(
                   run_dir, write_config(doc, config_path)))


if __name__ == "__main__":
    sys.exit(main())
