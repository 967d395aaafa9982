import glob
import hashlib
import importlib.util
import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# XLA compiles the tests' toy steps with LLVM's optimisations off: the tests
# check values, not speed, and a compile takes about a third less time (a
# 4-layer toy BERT's train step, quiet machine: 4.9-5.3 s -> 3.2-3.5 s;
# docs/performance.md). Subprocesses started by tests inherit it. A flag the
# caller set wins.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(
        filter(None, [os.environ.get("XLA_FLAGS"), "--xla_backend_optimization_level=0"]))

# Two logical CPU devices for MirroredStrategy parity tests (`cpu_devices`),
# set up by `pytest_configure` before TensorFlow initialises its devices.
CPU_DEVICES = []


# The fast tier, `pytest -m "not slow"`, holds no test whose setup and call
# took longer than this together: a session in which one did fails after its
# tests, naming it, so that a new long test is marked `slow` (or made
# shorter). Generous: the tier's longest tests took 5.1-5.2 s on 2 cores
# shared with a benchmark, once 13.3 s (a 1.3-s test, at a load average of
# 5); a toy `kdplug run` takes 10-50 s there. README.md, command 2.
FAST_TEST_LIMIT_S = 15.0


class DurationGuard:
    """Adds up each test's setup and call time as the reports come in (under
    pytest-xdist the controller gets every worker's reports) and, at the
    session's end, fails a session in which a test not marked `slow` took
    longer than `limit` seconds."""

    def __init__(self, limit):
        self.limit = limit
        self.durations = {}  # node id -> [seconds, marked slow]

    def pytest_runtest_logreport(self, report):
        if report.when in ("setup", "call"):
            entry = self.durations.setdefault(report.nodeid, [0.0, "slow" in report.keywords])
            entry[0] += report.duration

    def over_the_limit(self):
        """`(seconds, node id)` of the unmarked tests over the limit, longest first."""
        return sorted(((seconds, nodeid) for nodeid, (seconds, slow) in self.durations.items()
                       if not slow and seconds > self.limit), reverse=True)

    def pytest_sessionfinish(self, session):
        if self.over_the_limit() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        over = self.over_the_limit()
        if not over:
            return
        terminalreporter.section("tests over the fast tier's limit", sep="=", red=True)
        terminalreporter.line(
            f"{len(over)} test(s) not marked slow took longer than {self.limit:g} s "
            f"(setup and call): mark them @pytest.mark.slow (tests/conftest.py, "
            f"FAST_TEST_LIMIT_S) or make them shorter")
        for seconds, nodeid in over:
            terminalreporter.line(f"{seconds:8.2f}s {nodeid}")


def fast_first(values):
    """`values` for `pytest.mark.parametrize`, all but the first marked
    `slow`: a check repeated over families or variants runs on one of them in
    the fast tier and on every one in the full suite."""
    return [values[0], *(pytest.param(value, marks=pytest.mark.slow) for value in values[1:])]


def pytest_configure(config):
    """Sets up TensorFlow in each process that runs tests, before collection.

    Under pytest-xdist, each worker's TensorFlow gets its share of the cores
    (`.ci/run`: 2 workers on 2 cores, one thread each) instead of a pool per
    core each: oversubscribed, oneDNN's and TensorFlow's threads wait on
    each other (tests/run/test_experiment.py + test_run_folder.py under
    `-n 2`: 55-57 s instead of 65-68 s). The xdist controller runs no test
    and never imports TensorFlow, so it starts the workers at once (it took
    10-14 s to import it first). The process that sees every test's report
    (the xdist controller, or the only process) checks their durations
    (`DurationGuard`)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationGuard(FAST_TEST_LIMIT_S), "duration-guard")
    if _schedules_only(config):
        return
    import tensorflow as tf

    from kdplug import testing

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        threads = max(1, (os.cpu_count() or 1) // workers)
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    CPU_DEVICES[:] = testing.two_cpu_devices()


def pytest_collection_modifyitems(config, items):
    """Runs the test files that hold a `slow` test first, each file's tests
    together and in order, the rest after them in collection order: under
    pytest-xdist the workers then end on short tests, where a 50-s test
    started last kept one worker busy while the other waited (measured:
    the mirrored XLA run, 47-52 s, started last with a worker idle ~60 s)."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable


def _schedules_only(config):
    """Whether this process is the pytest-xdist controller, which hands the
    tests to its workers and runs none."""
    return (not hasattr(config, "workerinput") and not config.getoption("collectonly")
            and config.getoption("dist", "no") != "no"
            and bool(config.getoption("tx", None)))


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
# What the benchmarks write for real: a bench test that wrote here instead of
# its tmp_path would overwrite measured results.
BENCH_OUTPUTS = ("docs/*.md", "docs/img/*", "bench/results/*.json")


def run_toy_config(config):
    """Runs a `kdplug.testing.toy_config.write_toy_config` config with
    `kdplug run` (as a user's command line would) and reads what the
    finished run wrote.

    Args:
        config: the config's path.

    Returns:
        `(report, history, summary)`: its `metrics.json`, the history of
        its one stage (`stages/<tag>.history.json`) and its `summary.md`.

    Examples:

    ```python
    report, history, summary = run_toy_config(write_toy_config(tmp_path, {"name": "kd"}))
    ```
    """
    import glob
    import json
    import os

    from kdplug.cli import main
    from kdplug.run_files import METRICS
    from kdplug.run_files import STAGE_HISTORY
    from kdplug.run_files import STAGES
    from kdplug.run_files import SUMMARY

    code = main(["run", str(config)])
    assert code == 0, f"kdplug run {config} exited with {code}"
    run_dir = os.path.join(os.path.dirname(str(config)), "runs", "toy")
    with open(os.path.join(run_dir, METRICS), encoding="utf-8") as f:
        report = json.load(f)
    (path,) = glob.glob(os.path.join(run_dir, STAGES, STAGE_HISTORY.format(tag="*")))
    with open(path, encoding="utf-8") as f:
        history = json.load(f)
    with open(os.path.join(run_dir, SUMMARY), encoding="utf-8") as f:
        return report, history, f.read()


def load_bench_script(name):
    """A `bench/<name>.py` script as a module (its folder goes on sys.path,
    as when it runs as a script, so it finds `benchlib`)."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bench_script():
    """`bench_script("fastbert")`: loads a bench script (`load_bench_script`)."""
    return load_bench_script


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own kdplug cache folder, a fixed seed and its own
    (absent) bench pause file: a benchmark paused in the work tree
    (runs/bench.pause) does not pause the tests' campaigns."""
    import keras  # imported by pytest_configure already

    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "kdplug-cache"))
    monkeypatch.setenv("KDPLUG_BENCH_PAUSE", str(tmp_path / "bench.pause"))
    keras.utils.set_random_seed(0)


def _bench_output_hashes():
    found = {}
    for pattern in BENCH_OUTPUTS:
        for path in glob.glob(os.path.join(ROOT, pattern)):
            with open(path, "rb") as f:
                found[os.path.relpath(path, ROOT)] = hashlib.sha256(f.read()).hexdigest()
    return found


@pytest.fixture(autouse=True)
def _bench_outputs_untouched(request):
    """Fails a test of tests/bench/ that wrote the work tree's docs/ or
    bench/results/ (each passes its own folders or patches the script's
    paths). A benchmark running beside the tests in the same work tree
    writes there too; the message then names its files as well."""
    if os.path.join("tests", "bench") not in str(request.path):
        yield
        return
    before = _bench_output_hashes()
    yield
    after = _bench_output_hashes()
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert not changed, (
        f"this test wrote the real {', '.join(changed)} (or a benchmark running "
        f"in {ROOT} did): `git status` and `git diff` show what changed")


@pytest.fixture
def cpu_devices():
    return CPU_DEVICES


@pytest.fixture
def kdplug_log(caplog):
    """`kdplug_log()`: the messages kdplug logged so far in this test."""
    caplog.set_level("INFO", logger="kdplug")
    return lambda: [r.getMessage() for r in caplog.records
                    if r.name.startswith("kdplug")]


OTHER_SECTIONS = (
    "# Benchmark results\n\nIntro written by hand.\n\n"
    "<!-- quality:start -->\nquality table\n<!-- quality:end -->\n\nOutro.\n")


@pytest.fixture
def results_docs(tmp_path):
    """A docs folder whose results.md holds hand-written text and another
    script's section (`OTHER_SECTIONS`), which a bench run must keep."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "results.md").write_text(OTHER_SECTIONS)
    return docs
