"""Analysis benchmark: what the teacher and three distilled students know,
layer by layer, and where their mistakes differ (docs/analysis.md).

    python bench/analysis.py                    # train missing students, analyse, write the section
    python bench/analysis.py --seeds 0,1,2 --max-examples 2000
    python bench/analysis.py --render-only      # rewrite the section from the stored result

Models: the fine-tuned MiniLM-L6 teacher and three students trained by
`bench/quality.py` (seed 0, its default budget): `kd` (3 layers, teacher
layers 1, 3, 5), `pkd_skip` (3 layers, teacher layers 1, 2, 3) and
`bilstm_aug` (BiLSTM on WordPiece ids with Tang augmentation). Their run
folders are read from `runs/quality/quality-<row>-s0/` (`--run-root`); a
missing one is trained first with `bench/quality.py --only <rows>`, whose
results then go to `runs/analysis/students.json`, leaving the stored quality
table alone.

The analysis is `kdplug analyze` on the three runs (`kdplug.analysis.
analyze_runs`): probing sets built from movie_snippets' training sentences
(the surface tasks, and the syntactic ones with spaCy's silver parses), a
logistic-regression probe per layer, sentence vector, task and seed; and each
student against the teacher on the test split. The comparison folder
(`runs/analysis/comparison/`) gets every file `kdplug analyze` writes; the
result is stored in `bench/results/analysis.json`, its heat maps and
reliability diagrams are copied to `docs/img/`, and the Markdown section of
`docs/results.md` between `<!-- analysis:start -->` and `<!-- analysis:end -->`
is regenerated (the reading written by hand below it is not touched).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from benchlib import RESULTS_PAGE  # bench/ is the script's folder
from benchlib import ROOT
from benchlib import add_write_docs_argument
from benchlib import cpu_model
from benchlib import parse_seeds
from benchlib import usable_cpus
from benchlib import write_marked_section
from kdplug.run_files import STUDENT_FILE

RESULT = os.path.join(ROOT, "bench", "results", "analysis.json")
IMG = os.path.join(ROOT, "docs", "img")
SECTION = "analysis"

# (quality.py row, name in the tables)
STUDENTS = [
    ("kd", "kd 3L"),
    ("pkd_skip", "pkd-skip 3L"),
    ("bilstm_aug", "BiLSTM+aug"),
]


def run_dir(run_root, row):
    return os.path.join(run_root, f"quality-{row}-s0")


def config_file(row):
    return os.path.join(ROOT, "runs", f"quality-{row}-s0.yaml")


def train_missing(run_root, python=sys.executable):
    """Trains the students whose run folder has no `student.keras`."""
    missing = [row for row, _ in STUDENTS
               if not os.path.isfile(os.path.join(run_dir(run_root, row), STUDENT_FILE))]
    if not missing:
        return []
    results = os.path.join(ROOT, "runs", "analysis", "students.json")
    command = [python, os.path.join(ROOT, "bench", "quality.py"), "--only",
               ",".join(missing), "--run-root", run_root, "--results", results,
               "--write-docs", os.path.join(ROOT, "runs", "analysis", "students.md")]
    print("training:", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)
    return missing


def analyse(args):
    from kdplug.analysis.run_models import analyze_runs
    from kdplug.config.sections import AnalysisConfig
    from kdplug.config.sections import ProbingConfig

    config = AnalysisConfig(probing=ProbingConfig(
        seeds=args.seed_list, max_examples=args.max_examples, probe=args.probe))
    comparison = os.path.join(ROOT, "runs", "analysis", "comparison")
    start = time.perf_counter()
    written = analyze_runs(
        [run_dir(args.run_root, row) for row, _ in STUDENTS], output_dir=comparison,
        config=config, config_files=[config_file(row) for row, _ in STUDENTS],
        names=[name for _, name in STUDENTS])
    seconds = time.perf_counter() - start
    with open(os.path.join(comparison, "analysis.json"), encoding="utf-8") as f:
        result = json.load(f)
    result["bench"] = {"seconds": seconds, "machine": f"{usable_cpus()} x {cpu_model()}",
                       "runs": {name: run_dir(args.run_root, row) for row, name in STUDENTS}}
    os.makedirs(os.path.dirname(RESULT), exist_ok=True)
    with open(RESULT, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    for name, path in result.get("plots", {}).items():
        shutil.copyfile(os.path.join(os.path.dirname(written["comparison"]), path),
                        os.path.join(IMG, f"analysis_{path}"))
    return result


# --------------------------------------------------------------------------
# Markdown


def _acc(stats):
    std = stats.get("test_std") or 0.0
    return f"{stats['test_accuracy']:.3f} ± {std:.3f}"


def _best(layers):
    """`(accuracy stats, layer, vector)` of the best layer/vector."""
    return max(((stats, layer, pooling) for layer, by_pooling in layers.items()
                for pooling, stats in by_pooling.items()),
               key=lambda item: item[0]["test_accuracy"])


def _top(layers):
    """The vector the classifier reads: the top layer's [CLS] (a BiLSTM's
    pooled state)."""
    layer = list(layers)[-1]
    by_pooling = layers[layer]
    return by_pooling.get("cls") or by_pooling.get("pooled")


def render(result):
    """The Markdown section of docs/results.md for a stored result."""
    probing = result.get("probing") or {}
    models = [m["name"] for m in result["models"]]
    config = result["config"]["probing"]
    bench = result.get("bench", {})
    lines = [
        "## Analysis: what the students learn",
        "",
        f"`python bench/analysis.py` ({bench.get('machine', '?')}, "
        f"{bench.get('seconds', 0) / 60:.0f} min for the analysis): the fine-tuned "
        "MiniLM-L6 teacher and three students of the quality table (seed 0, one epoch "
        "per stage), probed with the same probing sets built from movie_snippets' "
        f"training sentences (at most {config['max_examples']} examples per task, "
        "classes balanced), a logistic-regression probe per layer, sentence vector "
        f"and task (max_iter {config['max_iter']}), seeds "
        f"{', '.join(map(str, config['seeds']))}: test accuracy, mean ± standard "
        "deviation over probe seeds. Syntactic labels are silver (spaCy "
        "`en_core_web_sm` parses). How to read every table: "
        "[analysis.md](analysis.md).",
        "",
        "| model | parameters |", "|---|---|",
    ]
    lines += [f"| {m['name']} | {m['params'] / 1e6:.1f}M |" for m in result["models"]]
    if probing:
        tasks = probing["tasks"]
        lines += ["", "### Probing: best layer per task", "",
                  "| task (classes, majority baseline) | " + " | ".join(models) + " |",
                  "|---|" + "---|" * len(models)]
        for task in tasks:
            cells = []
            for model in models:
                stats, layer, pooling = _best(probing["results"][model][task["name"]])
                cells.append(f"{_acc(stats)} ({layer}, {pooling})")
            lines.append(f"| {task['name']} ({len(task['label_names'])}, "
                         f"{task['majority_baseline']:.2f}) | " + " | ".join(cells) + " |")
        lines += ["", "### Probing: the vector each classifier reads "
                  "(top layer's [CLS]; the BiLSTM's pooled state)", "",
                  "| task | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
        for task in tasks:
            cells = [_acc(_top(probing["results"][model][task["name"]])) for model in models]
            lines.append(f"| {task['name']} | " + " | ".join(cells) + " |")
        lines += ["", "![probing, [CLS] vectors](img/analysis_probing_cls.png)", "",
                  "![probing, mean-pooled vectors](img/analysis_probing_mean.png)"]
    behaviour = result.get("behaviour") or {}
    if behaviour:
        lines += ["", "### Behaviour on the test split", "",
                  "| student | accuracy (teacher) | agreement | both right | teacher only "
                  "| student only | both wrong | student errors the teacher also makes "
                  "| ECE teacher / student |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, report in behaviour.items():
            o, cal = report["error_overlap"], report["calibration"]
            lines.append(
                f"| {name} | {o['student_accuracy']:.4f} ({o['teacher_accuracy']:.4f}) | "
                f"{report['agreement']:.3f} | {o['both_right']} | {o['teacher_only']} | "
                f"{o['student_only']} | {o['both_wrong']} | "
                f"{o['student_errors_teacher_also_makes']:.2f} | "
                f"{cal['teacher']['ece']:.3f} / {cal['student']['ece']:.3f} |")
        first = next(iter(behaviour.values()))
        buckets = [row["bucket"] for row in first["by_length"]]
        lines += ["", "Accuracy by sentence length (words):", "",
                  "| model | " + " | ".join(
                      f"{b} (n={row['n']})" for b, row in zip(buckets, first["by_length"]))
                  + " |", "|---|" + "---|" * len(buckets)]
        lines.append("| teacher | " + " | ".join(
            _cell(row["teacher"]) for row in first["by_length"]) + " |")
        for name, report in behaviour.items():
            lines.append(f"| {name} | " + " | ".join(
                _cell(row["student"]) for row in report["by_length"]) + " |")
        lines += ["", "| model | accuracy | mean confidence | ECE | MCE | Brier | NLL |",
                  "|---|---|---|---|---|---|---|"]
        rows = [("teacher", first["calibration"]["teacher"])] + [
            (name, report["calibration"]["student"]) for name, report in behaviour.items()]
        for name, c in rows:
            lines.append(f"| {name} | {c['accuracy']:.4f} | {c['mean_confidence']:.3f} | "
                         f"{c['ece']:.3f} | {c['mce']:.3f} | {c['brier']:.3f} | "
                         f"{c['nll']:.3f} |")
        lines += [""] + [f"![reliability {name}](img/analysis_{path})"
                         for name, path in result.get("plots", {}).items()
                         if name.startswith("reliability")]
    lines += ["", "Regenerate: `python bench/analysis.py` (trains missing students with "
              "`bench/quality.py`); `--render-only` rebuilds this section from "
              "`bench/results/analysis.json`."]
    return "\n".join(lines)


def _cell(value):
    return "–" if value is None else f"{value:.3f}"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench/analysis.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2", help="probe seeds (default 0,1,2)")
    parser.add_argument("--max-examples", type=int, default=2000,
                        help="examples per built probing task (default 2000)")
    parser.add_argument("--probe", default="logistic", choices=("logistic", "mlp"))
    parser.add_argument("--run-root", default=os.path.join(ROOT, "runs", "quality"),
                        help="the quality bench's run folders")
    add_write_docs_argument(parser, always="docs/results.md")
    parser.add_argument("--render-only", action="store_true",
                        help="only rewrite the section from bench/results/analysis.json")
    args = parser.parse_args(argv)
    args.seed_list = parse_seeds(parser, args.seeds)
    args.write_docs = args.write_docs or RESULTS_PAGE
    return args


def main(argv=None):
    args = parse_args(argv)
    from kdplug.run.console import configure_logging

    configure_logging()
    if args.render_only:
        with open(RESULT, encoding="utf-8") as f:
            result = json.load(f)
    else:
        train_missing(args.run_root)
        result = analyse(args)
    write_marked_section(args.write_docs, SECTION, render(result))
    print(f"wrote {args.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
