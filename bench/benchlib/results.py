"""The results files (`bench/results/<name>.json`), what they keep of a
run, the machine a result was measured on, and the table cells the
sections share."""

import datetime
import fcntl
import importlib.metadata
import json
import os
import platform
import statistics

from kdplug import storage


def load_results(path):
    """The results stored at `path` (`{"results": {key: entry}}`), empty
    when there is no file yet.

    Args:
        path: the results file.
    """
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return {"results": {}}


def save_results(path, results):
    """Writes `results` (`{"results": {key: entry}}`) to `path`, keeping the
    rows another process wrote there since this one read it: campaigns that
    run in parts may run two at once on one results file (e.g. a row from
    each work tree), and the last to save would otherwise drop the other's
    rows. A key both hold keeps the entry `finished` last (a failure, which
    has no `finished`, counts as oldest; a tie keeps this process's), so a
    stale copy never overwrites a newer measurement and a failed re-run
    never overwrites a result. `results` gets the merged rows too, in the
    file's (sorted) order (so this process's Markdown shows them as
    `--render-only` will). The read and the write hold an
    exclusive lock on `<path>.lock`.

    Args:
        path: the results file.
        results: this process's results, merged in place.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            mine = results["results"]
            for key, entry in load_results(path).get("results", {}).items():
                if key not in mine or _finished(entry) > _finished(mine[key]):
                    mine[key] = entry
            # in the file's order, so a section rendered now reads the rows as
            # `--render-only` will read them from the file
            results["results"] = dict(sorted(mine.items()))
            storage.write_json(path, results, indent=1, sort_keys=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _finished(entry):
    """When a stored row finished (ISO 8601, UTC), "" for a failure."""
    return entry.get("finished") or ""


def now():
    """This moment, UTC, ISO 8601 to the second: an entry's `finished`."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_summary(report, wall_s, teacher=False, gpu_hidden=True, smoke=False):
    """What a results file keeps of one `kdplug run` report, or of a teacher
    job's (`teacher_job`): accuracies, parameters, latency, the seconds of
    each phase, the teacher-output cache and transfer set, each stage's last
    history values, and when and where it ran. The caller adds what names
    the row (row, seed, budget).

    Args:
        report: the run's report (`metrics.json`).
        wall_s: the run's wall time.
        teacher: the report is a teacher job's (its training time is the
            teacher's fine-tuning).
        gpu_hidden: whether the run could not see a GPU.
        smoke: a smoke run (tiny teacher, toy data).
    """
    seconds = report.get("seconds", {})
    stage_s = sum(v for k, v in seconds.items() if k.startswith("stage "))
    if teacher:
        stage_s = seconds.get("teacher fine-tuning", 0.0)
    cache = report.get("teacher_output_cache")
    return {
        "accuracy": report["student"]["accuracy"],
        "teacher_accuracy": report["teacher"]["accuracy"],
        "params": report["student"]["params"],
        "latency_ms": report["student"]["latency_ms"]["median"],
        "train_s": stage_s,
        "seconds": seconds,
        "teacher_outputs": None if cache is None else {
            "cached": bool(cache.get("cached")),
            "seconds": seconds.get("teacher outputs"),
        },
        "transfer_set": report.get("transfer_set") or {},
        "history": {stage: {k: v[-1] for k, v in h.items() if v}
                    for stage, h in (report.get("history") or {}).items()},
        "shared_teacher": report.get("shared_teacher"),
        "wall_s": wall_s,
        "finished": now(),
        "machine": machine(gpu_hidden=gpu_hidden),
        "smoke": bool(smoke),
    }


def machine(gpu_hidden=True):
    """CPU and library versions of this machine (without importing TF).

    Args:
        gpu_hidden: whether the measured runs could not see a GPU.
    """
    def version(name):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {
        "arch": platform.machine(),
        "cpus": usable_cpus(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "tensorflow": version("tensorflow") or version("tensorflow-cpu"),
        "keras": version("keras"),
        "keras_hub": version("keras-hub"),
        "gpu_hidden": gpu_hidden,
    }


def machine_text(machine):
    """One line on a `machine()` record: cores, CPU, GPU use, library
    versions.

    Args:
        machine: the record.
    """
    where = "CPU only (GPUs hidden)" if machine.get("gpu_hidden") else "GPU allowed"
    return (f"{machine.get('cpus')} CPU core(s) ({machine.get('cpu')}), {where}; "
            f"TensorFlow {machine.get('tensorflow')}, Keras {machine.get('keras')}, "
            f"keras-hub {machine.get('keras_hub')}")


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


def time_cell(entries, key="train_s", pick=min):
    """A table cell of seconds over a row's stored runs (`pick`: `min` for
    the fastest seed, `statistics.fmean` for the mean), read from whole runs
    only: a resumed run's times are its last process's part (`Job`), so it
    is no timing; `–` when every run was resumed.

    >>> time_cell([{"train_s": 90.0}, {"train_s": 20.0, "resumed": True}])
    '90'
    """
    whole = [e[key] for e in entries if not e.get("resumed") and e.get(key) is not None]
    return f"{pick(whole):.0f}" if whole else "–"


def mean_sd_cell(values, digits=4):
    """A results-table cell over seeds: `0.8400 ± 0.0100` (mean and sample
    standard deviation), the mean alone for one value, `–` for none.

    Args:
        values: the seeds' values.
        digits: decimals shown.

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
