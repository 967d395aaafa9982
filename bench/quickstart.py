"""The quickstart as a newcomer runs it (README command 1's job), timed by
phase, from a cold and a warm cache, over seeds, and side by side with
another revision of kdplug.

    python bench/quickstart.py                    # seed 0: cold, then warm
    python bench/quickstart.py --seeds 0,1,2       # warm runs for seeds 1, 2 too
    python bench/quickstart.py --ref 41ededf       # the same runs of another revision
    python bench/quickstart.py --render-only       # rebuild the README block

Each run is `kdplug run configs/quickstart.yaml` (the tree's own config,
`seed` replaced, its data path made absolute) in a child process under
`/usr/bin/time -v` (wall time, peak RSS). **Cold**: a new, empty
`KDPLUG_CACHE_DIR` (the teacher is fine-tuned and its outputs computed, as
on a fresh machine); **warm**: a cache the tree's cold run filled. The
phases come from the run's `metrics.json` (`seconds`), the accuracies and
latencies from its report and exports. `--ref REV` runs the same in a
`git worktree` of REV (its own configs and code on `PYTHONPATH`), so two
revisions are timed one after the other on the same machine; the section
shows them side by side. The load average before each run is kept: a run
on a busy machine says so.

Results: `bench/results/quickstart.json` (`<tree>/<cold|warm>/seed<s>`,
tree `current` or the `--ref` given); the README block `quickstart`
(`--write-docs PATH` sends it elsewhere).
"""

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import ROOT  # bench/ is the script's folder
from benchlib import Job
from benchlib import add_write_docs_argument
from benchlib import load_results
from benchlib import machine
from benchlib import machine_text
from benchlib import markers
from benchlib import now
from benchlib import parse_seeds
from benchlib import run_child
from benchlib import run_jobs
from benchlib import save_results
from benchlib import write_config
from benchlib import write_marked_section
from kdplug.run_files import METRICS

START, END = markers("quickstart")
README = os.path.join(ROOT, "README.md")
RESULTS = os.path.join(ROOT, "bench", "results", "quickstart.json")
CURRENT = "current"
# the report's phases, in the order the run goes through them
PHASES = ["teacher fine-tuning", "teacher outputs", "distill", "evaluation", "export"]


@dataclasses.dataclass
class Measured:
    """One timed run: its report and what the child's clock and `time -v`
    said."""

    report: dict
    wall_s: float
    peak_rss_mb: float
    commit: str
    load: float


def tree_of(ref, work):
    """The source tree of `ref` (None: this working tree), checked out as a
    detached `git worktree` under `work` when needed."""
    if ref is None:
        return ROOT
    path = os.path.join(work, f"tree-{re.sub(r'[^A-Za-z0-9._-]', '_', ref)}")
    if not os.path.isdir(path):
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", path, ref],
                       check=True, capture_output=True)
    return path


def import_path(tree):
    """The `PYTHONPATH` entries that make a child import `tree`'s code:
    the tree, and for another revision a folder whose `kdplug_plugins`
    links to the tree's plugins/ (the built-in plugins install under that
    name; without it the entry points would load this checkout's plugins
    through its editable install)."""
    if tree == ROOT:
        return [tree]
    shim = tree + "-imports"
    os.makedirs(shim, exist_ok=True)
    link = os.path.join(shim, "kdplug_plugins")
    if not os.path.islink(link):
        os.symlink(os.path.join(tree, "plugins"), link)
    return [tree, shim]


def commit_of(tree):
    out = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", tree, "status", "--porcelain", "--",
                            "kdplug", "plugins", "configs"], capture_output=True, text=True)
    return out.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def write_run_config(tree, seed, folder):
    """The tree's `configs/quickstart.yaml` with `seed` and an absolute data
    path, written into `folder`."""
    import yaml

    configs = os.path.join(tree, "configs")
    with open(os.path.join(configs, "quickstart.yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    doc["seed"] = seed
    doc["output_dir"] = os.path.join(folder, "run")
    doc["data"]["path"] = os.path.normpath(os.path.join(configs, doc["data"]["path"]))
    return write_config(doc, os.path.join(folder, "quickstart.yaml"))


def timed_run(tree, config, cache_dir, log_path):
    """Runs `kdplug run config` from `tree` under `/usr/bin/time -v`;
    returns `(wall_s, peak_rss_mb)`."""
    env = dict(os.environ, KDPLUG_CACHE_DIR=cache_dir, CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join(import_path(tree) + [p for p in [
                   os.environ.get("PYTHONPATH")] if p]))
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "kdplug.cli", "run", config]
    started = time.perf_counter()
    with open(log_path, "w") as log:
        done = run_child(command, log, cwd=tree, env=env)
    wall = time.perf_counter() - started
    with open(log_path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if done.returncode != 0:
        raise RuntimeError(f"exit status {done.returncode}; log {log_path}:\n{text[-2000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return wall, (int(rss.group(1)) / 1024 if rss else None)


def summarise(report, wall_s, peak_rss_mb, tree, commit, cache, seed, load):
    """What the results file keeps of one run."""
    seconds = report.get("seconds", {})
    phases = {phase: sum(v for k, v in seconds.items()
                         if k == phase or (phase == "distill" and k.startswith("stage ")))
              for phase in PHASES}
    export = report.get("export") or {}
    return {
        "tree": tree, "commit": commit, "cache": cache, "seed": seed,
        "wall_s": wall_s, "peak_rss_mb": peak_rss_mb, "phases_s": phases,
        "teacher_accuracy": report["teacher"]["accuracy"],
        "student_accuracy": report["student"]["accuracy"],
        "int8_accuracy": export.get("accuracy", {}).get("tflite_int8"),
        "latency_ms": {
            "teacher": report["teacher"].get("latency_ms", {}).get("median"),
            "student": report["student"].get("latency_ms", {}).get("median"),
            "int8": export.get("latency_ms", {}).get("tflite_int8", {})
            .get("batch_1", {}).get("median")},
        "load_average_before": load,
        "machine": machine(),
        "finished": now(),
    }


def jobs(args, work):
    out = []
    for ref in [None] + ([args.ref] if args.ref else []):
        name = ref or CURRENT
        caches = {"warm": os.path.join(work, f"cache-{re.sub(r'[^A-Za-z0-9._-]', '_', name)}")}
        for i, seed in enumerate(args.seeds):
            for cache in (["cold", "warm"] if i == 0 else ["warm"]):
                key = f"{name}/{cache}/seed{seed}"
                folder = os.path.join(work, key.replace("/", "-"))

                def run(ref=ref, name=name, seed=seed, cache=cache, folder=folder):
                    tree = tree_of(ref, work)
                    shutil.rmtree(folder, ignore_errors=True)
                    config = write_run_config(tree, seed, folder)
                    if cache == "cold":
                        cache_dir = tempfile.mkdtemp(prefix="kdplug-cold-", dir=work)
                    else:
                        cache_dir = caches["warm"]
                    load = os.getloadavg()[0]
                    try:
                        wall, rss = timed_run(tree, config, cache_dir,
                                              os.path.join(folder, "run.log"))
                    finally:
                        if cache == "cold":  # the warm runs start from what it
                            # filled, never from an older (or failed) run's cache
                            shutil.rmtree(caches["warm"], ignore_errors=True)
                            os.replace(cache_dir, caches["warm"])
                    with open(os.path.join(folder, "run", METRICS)) as f:
                        report = json.load(f)
                    return Measured(report, wall, rss, commit_of(tree), load)

                out.append(Job(
                    key, run=run,
                    summarise=lambda m, _wall, name=name, cache=cache, seed=seed: summarise(
                        m.report, m.wall_s, m.peak_rss_mb, name, m.commit, cache, seed,
                        m.load),
                    describe=lambda e: (f"{e['wall_s'] / 60:.1f} min, student "
                                        f"{e['student_accuracy']:.4f}"),
                    failure={"tree": name, "cache": cache, "seed": seed},
                    estimate_s=510 if cache == "cold" else 170))
    return out


def minutes(seconds):
    return f"{int(seconds // 60)} min {round(seconds % 60):02d} s"


def render(results):
    """The README block: per tree, the cold run's phases and totals, the
    warm runs' wall time, and the accuracies over seeds."""
    entries = [e for e in results.get("results", {}).values() if "error" not in e]
    if not entries:
        return "No quickstart run is measured yet: `python bench/quickstart.py`."
    trees = sorted({e["tree"] for e in entries}, key=lambda t: (t != CURRENT, t))
    lines = ["| | " + " | ".join(f"`{t}` ({next(e['commit'] for e in entries if e['tree'] == t)})"
                                  for t in trees) + " |",
             "|---|" + "---|" * len(trees)]

    def row(label, cell):
        values = []
        for tree in trees:
            of_tree = [e for e in entries if e["tree"] == tree]
            values.append(cell(of_tree) or "–")
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    def cold(of_tree):
        return next((e for e in of_tree if e["cache"] == "cold"), None)

    row("cold start, wall (peak RSS)", lambda t: cold(t) and (
        f"{minutes(cold(t)['wall_s'])} ({cold(t)['peak_rss_mb'] / 1024:.1f} GB)"
        if cold(t)["peak_rss_mb"] else minutes(cold(t)["wall_s"])))
    for phase in PHASES:
        row(f"- {phase}", lambda t, p=phase: cold(t) and f"{cold(t)['phases_s'][p]:.0f} s")
    row("warm cache, wall", lambda t: ", ".join(
        minutes(e["wall_s"]) for e in sorted(t, key=lambda e: e["seed"]) if e["cache"] == "warm"))

    def accuracy(key):
        def cell(of_tree):
            runs = {e["seed"]: e[key] for e in of_tree if e.get(key) is not None}
            if not runs:
                return None
            values = [runs[s] for s in sorted(runs)]
            spread = f" ± {statistics.stdev(values):.4f}" if len(values) > 1 else ""
            return (f"{statistics.mean(values):.4f}{spread} (seeds "
                    f"{', '.join(str(s) for s in sorted(runs))})")
        return cell

    for model in ("teacher", "student", "int8"):
        row(f"batch-1 CPU latency, {model if model != 'int8' else 'student TFLite int8'}",
            lambda t, m=model: cold(t) and cold(t)["latency_ms"][m] is not None
            and f"{cold(t)['latency_ms'][m]:.1f} ms")
    row("teacher test accuracy", accuracy("teacher_accuracy"))
    row("student test accuracy", accuracy("student_accuracy"))
    row("student, TFLite int8", accuracy("int8_accuracy"))
    busy = [e for e in entries if (e.get("load_average_before") or 0) > 0.5]
    first = entries[0]
    lines += ["", f"`python bench/quickstart.py`; {machine_text(first['machine'])}; "
              f"measured {min(e.get('finished', '') for e in entries)[:10] or 'undated'}."
              + (f" {len(busy)} run(s) started on a busy machine (load average > 0.5): "
                 "their times are upper bounds." if busy else "")]
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--ref", help="another git revision to run the same beside")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--force", action="store_true", help="re-run stored results")
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--work", default=os.path.join(ROOT, "runs", "bench-quickstart"))
    add_write_docs_argument(parser, always=os.path.relpath(README, ROOT))
    args = parser.parse_args(argv)
    args.seeds = parse_seeds(parser, args.seeds)
    args.write_docs = args.write_docs or README
    return args


def main(argv=None):
    args = parse_args(argv)
    results = load_results(args.results)

    def write():
        write_marked_section(args.write_docs, "quickstart", render(results))

    if not args.render_only:
        os.makedirs(args.work, exist_ok=True)
        run_jobs(jobs(args, args.work), results,
                 save=lambda: save_results(args.results, results), render=write,
                 force=args.force)
    write()
    print(f"wrote {args.write_docs}")


if __name__ == "__main__":
    main()
