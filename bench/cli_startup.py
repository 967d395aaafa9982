"""How fast the read-only commands answer: this tree against a baseline.

Times `kdplug --help`, `kdplug plugins`, `kdplug cache ls` and
`kdplug validate configs/quickstart.yaml`, each a fresh interpreter (what a
user waits for), with this working tree and with a baseline revision of
kdplug (default `680f845`, the last landed release, whose commands
import TensorFlow) side by side: the two alternate within every round, so machine
noise hits both alike. Prints median seconds, the ratio baseline / this,
and whether TensorFlow was imported.

The baseline runs from a `git worktree` of that revision, put first on
`PYTHONPATH` (its `plugins/` as `kdplug_plugins`), so it needs the git
history; the installed entry points are shared (the same plugin names).

    python bench/cli_startup.py                  # 7 rounds, prints the table
    python bench/cli_startup.py --rounds 15 --write-docs
    python bench/cli_startup.py --baseline none  # this tree only
    python bench/cli_startup.py --render-only --write-docs   # from the stored results

The measurement (every round's seconds per command and side) is kept in
`bench/results/cli_startup.json` (`--results`; `--render-only` rewrites the
section from it); `--write-docs` puts the table between the
`<!-- cli-startup:start/end -->` markers of docs/performance.md (or PATH;
text outside them is kept).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib

ROOT = benchlib.ROOT
DOC = benchlib.PERFORMANCE_PAGE
DEFAULT_BASELINE = "680f845"
LIMIT_S = 1.5  # the target for every command on a 2-core machine
COMMANDS = {
    "kdplug --help": ["--help"],
    "kdplug plugins": ["plugins"],
    "kdplug cache ls": ["cache", "ls"],
    "kdplug validate configs/quickstart.yaml": ["validate", "configs/quickstart.yaml"],
}
# What the `kdplug` console script does, and whether TensorFlow got imported
# (reported on stderr, after the command's own output).
PROGRAM = (
    "import sys\n"
    "from kdplug.cli import main\n"
    "try:\n"
    "    status = main(sys.argv[1:])\n"
    "except SystemExit as e:\n"
    "    status = e.code\n"
    "print('tensorflow-imported', 'tensorflow' in sys.modules, file=sys.stderr)\n"
    "sys.exit(status)\n"
)


def baseline_tree(revision, folder):
    """A checkout of `revision` importable as `kdplug` and `kdplug_plugins`;
    returns the folder to put on `PYTHONPATH`."""
    tree = os.path.join(folder, "tree")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "--force",
                    tree, revision], check=True, capture_output=True)
    path = os.path.join(folder, "path")
    os.makedirs(path)
    os.symlink(os.path.join(tree, "kdplug"), os.path.join(path, "kdplug"))
    os.symlink(os.path.join(tree, "plugins"), os.path.join(path, "kdplug_plugins"))
    return tree, path


def time_command(args, python_path, cache_dir):
    """`(seconds, tensorflow imported)` of one fresh `kdplug <args>`.

    An exit status other than 0 is timed like any other (an old revision's
    `kdplug plugins` exits 1 when today's installed entry points name
    plugin modules it does not have); only a crash stops the bench."""
    env = dict(os.environ, KDPLUG_CACHE_DIR=cache_dir)
    if python_path:
        env["PYTHONPATH"] = python_path
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROGRAM, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if "tensorflow-imported" not in done.stderr:  # crashed before answering
        raise SystemExit(f"kdplug {' '.join(args)} crashed "
                         f"({'baseline' if python_path else 'this tree'}):\n{done.stderr}")
    return seconds, "tensorflow-imported True" in done.stderr


def time_rounds(rounds, python_path, cache_dir):
    """`{command: {"this": [s...], "baseline": [s...], "tf": {...}}}`,
    the two alternating inside every round."""
    runs = {name: {"this": [], "baseline": [], "tf": {}} for name in COMMANDS}
    sides = [("this", None)] + ([("baseline", python_path)] if python_path else [])
    for round_ in range(rounds + 1):  # round 0 warms the file cache, not kept
        for name, args in COMMANDS.items():
            order = sides if round_ % 2 else sides[::-1]
            for side, path in order:
                seconds, tf_imported = time_command(args, path, cache_dir)
                if round_:
                    runs[name][side].append(seconds)
                    runs[name]["tf"][side] = tf_imported
    return runs


def measure(args):
    """The measurement, a JSON-able dict: the machine, the settings (rounds,
    the baseline revision or None) and, per command, each side's seconds per
    round and whether it imported TensorFlow."""
    baseline = None if args.baseline == "none" else args.baseline
    with tempfile.TemporaryDirectory() as folder:
        cache_dir = os.path.join(folder, "cache")
        tree = path = None
        if baseline:
            tree, path = baseline_tree(baseline, folder)
        try:
            runs = time_rounds(args.rounds, path, cache_dir)
        finally:
            if tree:
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree],
                               capture_output=True)
    return {"machine": benchlib.machine(gpu_hidden=False),
            "settings": {"rounds": args.rounds, "baseline": baseline},
            "finished": benchlib.now(), "commands": runs}


def render(result):
    """The `cli-startup` section of docs/performance.md from a measurement:
    medians, ratios and the target."""
    m, s, runs = result["machine"], result["settings"], result["commands"]
    baseline = s["baseline"]
    lines = [
        f"### CLI start-up ({result['finished'][:10]}: {m['cpu']}, "
        f"{m['cpus']} cores, median of {s['rounds']})",
        "",
        "Measured by `python bench/cli_startup.py --write-docs`: each command in a "
        "fresh interpreter, this tree and "
        + (f"kdplug at `{baseline}` alternating in every round." if baseline
           else "no baseline."),
        "",
    ]
    if baseline:
        lines += ["| command | this tree (s) | TensorFlow | "
                  f"`{baseline}` (s) | TensorFlow | speed-up |",
                  "|---|---:|---|---:|---|---:|"]
    else:
        lines += ["| command | seconds | TensorFlow |", "|---|---:|---|"]
    for name, run in runs.items():
        this = statistics.median(run["this"])
        row = f"| `{name}` | {this:.2f} | {'yes' if run['tf']['this'] else 'no'} |"
        if baseline:
            base = statistics.median(run["baseline"])
            row += (f" {base:.2f} | {'yes' if run['tf']['baseline'] else 'no'} |"
                    f" {base / this:.1f}x |")
        lines.append(row)
    worst = max(statistics.median(r["this"]) for r in runs.values())
    verdict = "met" if worst <= LIMIT_S else "NOT met"
    lines += ["", f"Target: every command under {LIMIT_S} s on this machine: "
                  f"{verdict} (slowest {worst:.2f} s)."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", default=DEFAULT_BASELINE,
                        help="git revision to compare with, or 'none'")
    benchlib.add_measurement_arguments(parser, "cli_startup", DOC)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    benchlib.measurement_section(args, "cli-startup", lambda: measure(args), render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
