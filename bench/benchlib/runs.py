"""A campaign's runs: its jobs and their loop (`Job`, `run_jobs`), one
config run in a fresh process or in this one (`run_config`), child
processes stopped with the campaign (`run_child`), resumable run folders
and the `--seeds` option."""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable
from typing import Optional

from kdplug.evaluation.report import resumed_parts

from .paths import BENCH
from .paths import ROOT
from .teacher_job import teacher_job


def parse_seeds(parser, text):
    """`"0,1,2"` -> `[0, 1, 2]`; anything else is `parser.error` naming the
    option (`--seeds`).

    Args:
        parser: the script's `argparse.ArgumentParser`.
        text: the option's value.
    """
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


PAUSE_FILE = os.path.join(ROOT, "runs", "bench.pause")


def wait_while_paused(pause_file=None, poll_s=10.0):
    """Waits, before a campaign's next run starts, for as long as
    `pause_file` exists: `touch runs/bench.pause` lets the run in progress
    finish and then yields the machine (for a quiet timing) without
    stretching any run's wall time; removing the file goes on.

    Args:
        pause_file: the file whose presence pauses; by default
            `$KDPLUG_BENCH_PAUSE`, else `PAUSE_FILE` (runs/bench.pause).
        poll_s: seconds between looks.
    """
    pause_file = pause_file or os.environ.get("KDPLUG_BENCH_PAUSE", PAUSE_FILE)
    if os.path.exists(pause_file):
        print(f"paused: remove {pause_file} to go on", flush=True)
        while os.path.exists(pause_file):
            time.sleep(poll_s)
        print("resumed", flush=True)


def run_jobs(jobs, results, save, render, force=False, pause_file=None):
    """Runs a campaign's jobs in order: a stored result that still counts is
    kept (unless `force`); a failed run is recorded with its error and the
    campaign goes on; after every run the results are saved (`save()`) and
    the Markdown section rewritten (`render()`); a job that resumes a killed
    run (`Job.prepare`), or whose report says a part finished a killed
    run's work (`kdplug.evaluation.report.resumed_parts`: a cached
    teacher's fine-tuning, teacher-output shards), is marked `resumed`
    (with `resumed_parts`); no run starts while
    `pause_file` exists (`wait_while_paused`). Returns the failures.

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
        wait_while_paused(pause_file)
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
        parts = resumed_parts(report) if isinstance(report, dict) else {}
        if resumes or parts:  # wall_s counts only this process's part
            entry["resumed"] = True
        if parts:  # e.g. the shared teacher's fine-tuning, from its cache's backup
            entry["resumed_parts"] = parts
        save()
        render()
        print(f"{job.key}: {job.describe(entry)}, {wall:.0f} s", flush=True)
    render()
    return failures


def run_config(config_path, report_path, log_path=None, teacher=False,
               in_process=False, timeout=None, gpu=False):
    """Runs one row's config and returns its report: `kdplug run CONFIG`,
    or the teacher job (`teacher_job`) with `teacher`, in a fresh process
    (or in this one with `in_process`, as smoke runs do).

    Args:
        config_path: the row's config.
        report_path: where the run writes its report (`metrics.json`, or
            the teacher job's).
        log_path: the fresh process's output (not with `in_process`).
        teacher: run the teacher job instead of `kdplug run`.
        in_process: run in this process.
        timeout: seconds before a fresh process is stopped, or None.
        gpu: let a fresh process use a GPU (default: CPU only).
    """
    if in_process and teacher:
        return teacher_job(config_path, report_path)
    if in_process:
        return _kdplug_run(config_path)
    if teacher:
        command = [sys.executable, "-m", "benchlib.teacher_job", config_path, report_path]
        return run_subprocess(command, report_path, log_path, timeout, gpu, path=BENCH)
    command = [sys.executable, "-m", "kdplug.cli", "run", config_path]
    return run_subprocess(command, report_path, log_path, timeout, gpu)


def _kdplug_run(config_path):
    """`kdplug run CONFIG` in this process; returns its report.

    Args:
        config_path: the config.
    """
    from kdplug.config import load_config
    from kdplug.run.experiment import Experiment

    return Experiment(load_config(config_path)).run()


def run_subprocess(command, report_path, log_path, timeout=None, gpu=False, path=None):
    """Runs `command` in a fresh process from the repository root, its
    output to `log_path`, and returns the JSON report it wrote to
    `report_path`; a failure raises, with the log's tail.

    Args:
        command: the argument list.
        report_path: the report the command writes.
        log_path: its output.
        timeout: seconds before it is stopped, or None.
        gpu: let it use a GPU (default: CPU only, `CUDA_VISIBLE_DEVICES`
            empty).
        path: a folder put first on the process's `PYTHONPATH` (bench/ for
            `python -m benchlib...`), or None.
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    if path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    if not gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU benchmark
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        proc = run_child(command, log, timeout, cwd=ROOT, env=env)
    if proc.returncode != 0:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            tail = f.read()[-2000:]
        raise RuntimeError(f"exit status {proc.returncode}; log {log_path}:\n{tail}")
    with open(report_path, encoding="utf-8") as f:
        return json.load(f)
