"""What the bench scripts share: the machine line, the marked Markdown
sections of `docs/results.md`, run folders and seeds, the campaigns' job loop
and child runs, and the side-by-side timing helpers (padding counts,
interleaved rounds).

Each script owns one section of the results file, written between its own
`<!-- name:start -->` / `<!-- name:end -->` markers; text outside the markers
(introductions written by hand, other scripts' sections) is never changed.
"""

import dataclasses
import os
import platform
import shutil
import signal
import statistics
import subprocess
import time
from typing import Callable
from typing import Optional

from kdplug import storage

TITLE = "# Benchmark results\n"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def markers(name):
    """`("<!-- name:start -->", "<!-- name:end -->")`."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def write_marked_section(path, name, section, title=TITLE):
    """Puts `section` between `name`'s markers in `path`, atomically.

    A missing file is created with `title`; missing markers are appended at
    the end. Unbalanced markers (one without the other, or end before
    start) stop the script: they are fixed by hand, never guessed.

    Examples:

    >>> write_marked_section("docs/results.md", "fastbert", "## FastBERT ...")
    'docs/results.md'
    """
    start, end = markers(name)
    block = f"{start}\n{section.rstrip()}\n{end}"
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    else:
        text = title
    has_start, has_end = start in text, end in text
    if has_start != has_end or (has_start and text.index(start) > text.index(end)):
        raise SystemExit(f"{path}: unbalanced {start} / {end} markers; fix them by hand")
    if has_start:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    return storage.write_text(path, text)


def campaign_paths(args, name):
    """The folders and files of the campaign `name` (`claims`, `quality`,
    `seq2seq`), from its `--run-root`, `--results`, `--out` and `--smoke`.

    Sets `args.run_root` (default `runs/<name>`, `runs/<name>-smoke` with
    `--smoke`) and `args.config_dir`, where the rows' configs are written:
    `runs/`, the depth of the bundled configs' folder, so their `../data/...`
    paths resolve and the teacher's fine-tuning cache key matches
    `configs/*.yaml`'s; the run root with `--smoke`. Returns `(results,
    out)`: the results store (`bench/results/<name>.json`) and the Markdown
    file (`docs/results.md`), both under the run root with `--smoke`.

    Examples:

    >>> results, out = campaign_paths(args, "claims")
    """
    default = os.path.join(ROOT, "runs", f"{name}-smoke" if args.smoke else name)
    args.run_root = os.path.abspath(args.run_root or default)
    args.config_dir = args.run_root if args.smoke else os.path.join(ROOT, "runs")
    if args.smoke:
        results = os.path.join(args.run_root, f"{name}.json")
        out = os.path.join(args.run_root, "results.md")
    else:
        results = os.path.join(ROOT, "bench", "results", f"{name}.json")
        out = os.path.join(ROOT, "docs", "results.md")
    return args.results or results, args.out or out


def add_single_run_arguments(parser, name, config):
    """`--smoke`, `--config`, `--output-dir` and `--docs` of a script that
    benchmarks one config (`configs/<name>.yaml` by default); defaults
    filled in by `single_run_dirs`."""
    parser.add_argument("--smoke", action="store_true",
                        help="tiny preset and toy data (beside the run folder)")
    parser.add_argument("--config", default=config, help=f"the config to run ({name})")
    parser.add_argument("--output-dir", help=f"run folder (default runs/bench_{name}, "
                        f"or runs/bench_{name}_smoke with --smoke)")
    parser.add_argument("--docs", help="folder of results.md and its images (default "
                        "docs/, or <run folder>/docs with --smoke)")


def single_run_dirs(args, name):
    """Fills in `args.output_dir` and `args.docs` (`add_single_run_arguments`):
    `runs/bench_<name>` and `docs/`, or `runs/bench_<name>_smoke` and the run
    folder's `docs/` with `--smoke`, so a smoke run never touches docs/.
    Also `args.smoke_inputs`, `<run folder>-inputs`: where a smoke run writes
    its tiny preset and toy data (beside the run folder: `kdplug run`
    refuses a folder holding files it did not write)."""
    if args.output_dir is None:
        folder = f"bench_{name}_smoke" if args.smoke else f"bench_{name}"
        args.output_dir = os.path.join(ROOT, "runs", folder)
    args.smoke_inputs = args.output_dir.rstrip(os.sep) + "-inputs"
    if args.docs is None:
        args.docs = (os.path.join(args.output_dir, "docs") if args.smoke
                     else os.path.join(ROOT, "docs"))
    return args


def cpu_model():
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return name


def usable_cpus():
    """CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def padding_stats(dataset, mask_key):
    """`(padding fraction, positions fed, real positions, {width: batches})`
    of one epoch of `(features, labels)` batches, counted on the padding
    mask `features[mask_key]`."""
    real = fed = 0
    widths = {}
    for x, _ in dataset:
        mask = x[mask_key].numpy()
        real, fed = real + int(mask.sum()), fed + mask.size
        widths[mask.shape[1]] = widths.get(mask.shape[1], 0) + 1
    return 1 - real / fed, fed, real, dict(sorted(widths.items()))


def add_interleaved_arguments(parser, batches, rounds, steps):
    """`--batches`, `--rounds` and `--steps` of a script timed with
    `interleaved_rates`, with the script's defaults."""
    parser.add_argument("--batches", type=int, default=batches,
                        help="batches of each variant timed (from one shuffled epoch)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--steps", type=int, default=steps,
                        help="steps per variant per round")


def interleaved_rates(models, batches, rounds, steps):
    """`{variant: [examples/s per round]}`: `steps` `train_on_batch` calls
    of each variant's model on its own batches per round, the variants'
    order alternating between rounds, so machine noise hits them alike.

    Args:
        models: `{variant: compiled keras.Model}` (shapes compiled already).
        batches: `{variant: [(x, y)]}`, cycled through.
        rounds, steps: ints.
    """
    rates = {name: [] for name in models}
    names = list(models)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            stream = batches[name]
            chosen = [stream[(r * steps + i) % len(stream)] for i in range(steps)]
            begin = time.perf_counter()
            for x, y in chosen:
                models[name].train_on_batch(x, y)
            rates[name].append(sum(len(y) for _, y in chosen)
                               / (time.perf_counter() - begin))
    return rates


def mean_sd_cell(values, digits=4):
    """A results-table cell over seeds: `0.8400 ± 0.0100` (mean and sample
    standard deviation), the mean alone for one value, `–` for none.

    >>> mean_sd_cell([0.83, 0.85])
    '0.8400 ± 0.0141'
    >>> mean_sd_cell([38.46], digits=2)
    '38.46'
    """
    values = list(values)
    if not values:
        return "–"
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def machine_text(machine):
    """One line on a `quality.machine()` record: cores, CPU, GPU use,
    library versions."""
    where = "CPU only (GPUs hidden)" if machine.get("gpu_hidden") else "GPU allowed"
    return (f"{machine.get('cpus')} CPU core(s) ({machine.get('cpu')}), {where}; "
            f"TensorFlow {machine.get('tensorflow')}, Keras {machine.get('keras')}, "
            f"keras-hub {machine.get('keras_hub')}")


def parse_seeds(parser, text):
    """`"0,1,2"` -> `[0, 1, 2]`; anything else is `parser.error` naming the
    option (`--seeds`)."""
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--seeds: expected integers, got {text!r}")


@dataclasses.dataclass
class Job:
    """One run of a campaign whose results accumulate in a JSON file.

    Args:
        key: the result's key in `results["results"]`.
        run: `fn() -> report` that runs it (writes the config, runs `kdplug
            run` or the script's own job) and returns the run's report.
        summarise: `fn(report, wall_s) -> entry`, what the results file keeps.
        describe: `fn(entry) -> str`, the result on one line.
        keep: `fn(stored_entry) -> bool`, whether a stored result still
            counts (e.g. it was run with the same budget).
        failure: fields recorded with a failed run's error (row, seed, ...).
        prepare: `fn() -> bool`, called before `run`: readies the run's
            folder (e.g. writes the config, then `prepare_run_dir`) and says
            whether the run resumes a killed one (its entry is then marked
            `resumed`: its wall time is this process's part only).
        estimate_s: the expected wall time, shown when the job starts.
    """

    key: str
    run: Callable
    summarise: Callable
    describe: Callable
    keep: Callable = lambda stored: True
    failure: dict = dataclasses.field(default_factory=dict)
    prepare: Optional[Callable] = None
    estimate_s: Optional[float] = None


def prepare_run_dir(run_dir, config_path):
    """Readies a benchmark run's folder: one holding stages trained with the
    settings of `config_path` is kept, so that `kdplug run` resumes the run a
    kill interrupted (finished stages skipped, the interrupted one restored
    from its epoch backup); any other folder is removed, since its stages
    are stale for this config. Returns whether the run resumes.

    Examples:

    ```python
    resumes = prepare_run_dir("runs/claims/claims-movie-kd-s0",
                              "runs/claims-movie-kd-s0.yaml")
    ```
    """
    from kdplug.config import load_config
    from kdplug.run.run_folder import RunFolder
    from kdplug.run.run_folder import changed_fields
    from kdplug.run.run_folder import run_settings

    folder = RunFolder(run_dir)
    recorded = folder.recorded() if folder.has_training_state() else None
    if recorded is not None and not changed_fields(
            recorded, run_settings(load_config(config_path))):
        return True
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir, exist_ok=True)
    return False


def run_child(command, log, timeout=None, **kwargs):
    """`subprocess.run(command)` with its output to the open file `log`, and
    the child killed when this process is told to stop: `subprocess.run`
    kills its child on any exception (a timeout, Ctrl-C), but SIGTERM ends
    Python without one, which left a `kdplug run` of a killed campaign
    running beside the next job. While the child runs, SIGTERM raises
    `SystemExit(143)` here instead (the handler is restored afterwards; a
    killed `kdplug run` resumes from its last epoch backup).

    Args:
        command: the argument list.
        log: a file open for writing (stdout and stderr go there).
        timeout: seconds, or None.
        **kwargs: passed on to `subprocess.run` (`cwd`, `env`).

    Examples:

    ```python
    with open("runs/x.log", "w") as log:
        done = run_child([sys.executable, "-m", "kdplug.cli", "run", path], log)
    ```
    """
    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                              timeout=timeout, **kwargs)
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_jobs(jobs, results, save, render, force=False):
    """Runs a campaign's jobs in order: a stored result that still counts is
    kept (unless `force`); a failed run is recorded with its error and the
    campaign goes on; after every run the results are saved (`save()`) and
    the Markdown section rewritten (`render()`); a job that resumes a killed
    run (`Job.prepare`) is marked `resumed`. Returns the failures.

    Examples:

    ```python
    jobs = [Job(f"movie/kd/seed{s}", run=..., summarise=..., describe=...)
            for s in seeds]
    failures = run_jobs(jobs, results, lambda: save_results(path, results),
                        lambda: write_marked_section(out, "tasks", render(results)))
    ```
    """
    failures = 0
    for job in jobs:
        stored = results["results"].get(job.key)
        if stored and "error" not in stored and not force and job.keep(stored):
            print(f"{job.key}: stored result kept ({job.describe(stored)})", flush=True)
            continue
        start = time.perf_counter()
        try:
            resumes = bool(job.prepare()) if job.prepare else False
            estimate = f" (estimate ~{job.estimate_s / 60:.1f} min)" if job.estimate_s else ""
            print(f"{job.key}: {'resuming' if resumes else 'running'}{estimate}",
                  flush=True)
            report = job.run()
        except (Exception, subprocess.TimeoutExpired) as e:  # record, go on
            failures += 1
            wall = time.perf_counter() - start
            results["results"][job.key] = dict(job.failure, error=str(e)[-3000:],
                                               wall_s=wall)
            save()
            print(f"{job.key}: FAILED after {wall:.0f} s: {str(e)[-500:]}", flush=True)
            continue
        wall = time.perf_counter() - start
        entry = results["results"][job.key] = job.summarise(report, wall)
        if resumes:  # wall_s counts only this process's part
            entry["resumed"] = True
        save()
        render()
        print(f"{job.key}: {job.describe(entry)}, {wall:.0f} s", flush=True)
    render()
    return failures
