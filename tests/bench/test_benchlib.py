"""bench/benchlib/: the marked sections of the doc pages and `--write-docs`,
the results files, the machine line, the padding count, the interleaved
timing rounds and the child runs."""

import argparse
import doctest
import importlib
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import BENCH
from conftest import load_bench_script

if BENCH not in sys.path:  # as when a script runs from bench/
    sys.path.insert(0, BENCH)
import benchlib  # noqa: E402

MODULES = ["configs", "docs", "paths", "results", "runs", "single_run", "teacher_job",
           "timing"]


def test_write_marked_section_creates_replaces_and_keeps_other_text(tmp_path):
    start, end = benchlib.markers("fastbert")
    assert (start, end) == ("<!-- fastbert:start -->", "<!-- fastbert:end -->")
    path = tmp_path / "docs" / "results.md"
    benchlib.write_marked_section(str(path), "fastbert", "first\n")
    assert path.read_text() == f"{benchlib.TITLE}\n{start}\nfirst\n{end}\n"
    path.write_text(path.read_text() + "\nA later section.\n")
    benchlib.write_marked_section(str(path), "fastbert", "second")
    text = path.read_text()
    assert text.count(start) == 1 and "first" not in text
    assert text.endswith(f"{start}\nsecond\n{end}\n\nA later section.\n")
    # another script's section goes after, this one stays where it is
    benchlib.write_marked_section(str(path), "mtdnn", "other", title="ignored")
    assert path.read_text().startswith(benchlib.TITLE) and text in path.read_text()
    path.write_text(f"x\n{start}\nno end\n")
    with pytest.raises(SystemExit, match="unbalanced"):
        benchlib.write_marked_section(str(path), "fastbert", "third")
    assert path.read_text() == f"x\n{start}\nno end\n"
    assert list(tmp_path.glob("docs/.results-*")) == []  # no temporary left


def test_a_marker_quoted_in_prose_is_not_a_marker(tmp_path):
    """A marker quoted in a code span (as docs/performance.md's prose
    does) is not a marker: the prose is kept; a repeated marker stops the
    script."""
    start, end = benchlib.markers("throughput")
    path = tmp_path / "performance.md"
    prose = f"`--write-docs` writes between `{start}` / `{end}` below.\n\n"
    path.write_text(f"# T\n{prose}{start}\nold\n{end}\n")
    benchlib.write_marked_section(str(path), "throughput", "new")
    assert path.read_text() == f"# T\n{prose}{start}\nnew\n{end}\n"
    path.write_text(f"{start}\na\n{end}\n{start}\nb\n{end}\n")
    with pytest.raises(SystemExit, match="repeated"):
        benchlib.write_marked_section(str(path), "throughput", "new")


def test_benchlib_doctests_pass_and_write_nothing_where_they_run(tmp_path, monkeypatch):
    """A doctest run from any folder (bench/ once: it left a stray
    bench/docs/results.md) writes only into its own temporary folder."""
    monkeypatch.chdir(tmp_path)
    for name in MODULES:
        module = importlib.import_module(f"benchlib.{name}")
        assert doctest.testmod(module).failed == 0, name
    assert os.listdir(tmp_path) == []


def test_write_docs_is_one_flag_with_the_old_spellings_as_aliases(capsys):
    page = os.path.join(benchlib.ROOT, "docs", "performance.md")
    parser = argparse.ArgumentParser(prog="toy.py")
    benchlib.add_write_docs_argument(parser, page)
    assert parser.parse_args([]).write_docs is None  # only when asked
    assert parser.parse_args(["--write-docs"]).write_docs == page
    assert parser.parse_args(["--write-docs", "x.md"]).write_docs == "x.md"
    assert capsys.readouterr().err == ""
    assert parser.parse_args(["--write"]).write_docs == page
    assert parser.parse_args(["--write", "x.md"]).write_docs == "x.md"
    assert parser.parse_args(["--out", "y.md"]).write_docs == "y.md"
    assert capsys.readouterr().err.count("is deprecated, use --write-docs") == 3
    assert "--out" not in parser.format_help()
    campaign = argparse.ArgumentParser()  # writes after every run anyway
    benchlib.add_write_docs_argument(campaign, always="docs/results.md")
    assert campaign.parse_args(["--write-docs"]).write_docs is None
    args = campaign.parse_args([])
    args.smoke, args.run_root, args.results = False, None, None
    assert benchlib.campaign_paths(args, "toy")[1] == benchlib.RESULTS_PAGE
    args.write_docs = "elsewhere.md"
    assert benchlib.campaign_paths(args, "toy") == (
        os.path.join(benchlib.BENCH, "results", "toy.json"), "elsewhere.md")


def test_single_run_arguments_keep_smoke_runs_out_of_docs(tmp_path):
    parser = argparse.ArgumentParser()
    benchlib.add_single_run_arguments(parser, "toy", "configs/toy.yaml")
    args = benchlib.single_run_dirs(parser.parse_args([]), "toy")
    assert args.config == "configs/toy.yaml" and not args.smoke
    assert args.output_dir == os.path.join(benchlib.ROOT, "runs", "bench_toy")
    assert args.write_docs == os.path.join(benchlib.ROOT, "docs", "results.md")
    smoke = benchlib.single_run_dirs(parser.parse_args(["--smoke"]), "toy")
    assert smoke.output_dir == os.path.join(benchlib.ROOT, "runs", "bench_toy_smoke")
    assert smoke.write_docs == os.path.join(smoke.output_dir, "docs", "results.md")
    given = benchlib.single_run_dirs(parser.parse_args(
        ["--smoke", "--output-dir", str(tmp_path), "--write-docs", "elsewhere.md"]), "toy")
    assert (given.output_dir, given.write_docs) == (str(tmp_path), "elsewhere.md")


def test_interleaved_arguments_take_the_scripts_defaults():
    parser = argparse.ArgumentParser()
    benchlib.add_interleaved_arguments(parser, batches=24, rounds=4, steps=3)
    args = parser.parse_args([])
    assert (args.batches, args.rounds, args.steps) == (24, 4, 3)
    args = parser.parse_args(["--batches", "12", "--rounds", "2", "--steps", "1"])
    assert (args.batches, args.rounds, args.steps) == (12, 2, 1)


def test_two_processes_saving_one_results_file_keep_each_others_rows(tmp_path):
    """Two campaigns in parts on one file, each having read it before the
    other saved: neither drops the other's rows, a stale copy of a row does
    not overwrite its re-run, and a failed re-run keeps the result."""
    path = str(tmp_path / "results" / "claims.json")

    def row(accuracy, finished):
        return {"accuracy": accuracy, "finished": f"2026-11-27T{finished}:00+00:00"}

    benchlib.save_results(path, {"results": {"movie/kd/seed0": row(0.80, "10:00"),
                                             "movie/ft/seed0": row(0.84, "10:00")}})
    first, second = benchlib.load_results(path), benchlib.load_results(path)
    first["results"]["movie/mtdnn/seed0"] = row(0.70, "12:00")
    first["results"]["movie/ft/seed0"] = {"error": "killed"}  # a failed re-run
    second["results"]["tweets/kd/seed0"] = row(0.90, "11:00")
    second["results"]["movie/kd/seed0"] = row(0.81, "11:30")  # re-run (--force)
    benchlib.save_results(path, second)
    benchlib.save_results(path, first)  # holds the older movie/kd/seed0
    expected = {"movie/kd/seed0": row(0.81, "11:30"), "movie/ft/seed0": row(0.84, "10:00"),
                "movie/mtdnn/seed0": row(0.70, "12:00"), "tweets/kd/seed0": row(0.90, "11:00")}
    assert benchlib.load_results(path) == {"results": expected}
    assert first["results"] == expected  # its Markdown shows the other's rows
    assert sorted(os.listdir(tmp_path / "results")) == ["claims.json", "claims.json.lock"]


def test_run_config_starts_the_teacher_job_as_a_module_of_benchlib(tmp_path):
    """The teacher row's fresh process finds `benchlib.teacher_job` from the
    repository root (bench/ on its path) and fails on the config, naming it."""
    config = tmp_path / "missing.yaml"
    log = tmp_path / "teacher.log"
    with pytest.raises(RuntimeError, match="exit status 1"):
        benchlib.run_config(str(config), str(tmp_path / "teacher.json"), str(log),
                            teacher=True)
    text = log.read_text()
    assert "-m benchlib.teacher_job" in text and "missing.yaml" in text
    assert "No module named" not in text


def test_machine_description():
    assert benchlib.usable_cpus() >= 1
    assert benchlib.cpu_model()


def test_prepare_run_dir_keeps_a_resumable_folder_and_clears_a_stale_one(tmp_path):
    from kdplug.config import load_config
    from kdplug.run.run_folder import RunFolder
    from kdplug.run.run_folder import run_settings
    from kdplug.testing.toy_config import write_toy_config

    config = write_toy_config(tmp_path, {"name": "kd"})
    run_dir = str(tmp_path / "runs" / "toy")
    folder = RunFolder(run_dir)
    assert benchlib.prepare_run_dir(run_dir, config) is False  # nothing to resume
    # a run killed in its first stage: settings recorded, an epoch backup
    folder.record(run_settings(load_config(config)))
    backup = tmp_path / "runs" / "toy" / "backup" / "chkpt.weights.h5"
    backup.parent.mkdir()
    backup.write_text("epoch 2")
    assert benchlib.prepare_run_dir(run_dir, config) is True
    assert backup.read_text() == "epoch 2"  # kept for `kdplug run` to resume
    # another budget: the stages are stale for it, the folder starts empty
    changed = write_toy_config(tmp_path / "other", {"name": "kd"}, training={"epochs": 3},
                               teacher={"source": load_config(config).teacher.source},
                               data={"path": str(tmp_path / "toy.tsv")})
    assert benchlib.prepare_run_dir(run_dir, changed) is False
    assert (tmp_path / "runs" / "toy").is_dir() and not any((tmp_path / "runs" / "toy").iterdir())


def test_run_jobs_keeps_runs_records_and_marks_resumed_runs(capsys):
    """Stored results that still count are kept, a failure is recorded and
    the campaign goes on, a run resuming a killed one (its run folder, or a
    part its report names) is marked `resumed`;
    results are saved after every run."""
    results = {"results": {"a": {"accuracy": 0.5, "budget": 1},
                           "b": {"accuracy": 0.1, "budget": 0}}}
    saved, rendered = [], []

    def job(key, prepare=None, fails=False, report=None, **kwargs):
        def run():
            if fails:
                raise RuntimeError("out of memory")
            return {"accuracy": 0.75, **(report or {})}

        return benchlib.Job(
            key, run, summarise=lambda report, wall: {**report, "budget": 1,
                                                      "wall_s": wall},
            describe=lambda e: f"accuracy {e['accuracy']:.2f}",
            keep=lambda stored: stored["budget"] == 1, failure={"row": key},
            prepare=prepare, **kwargs)

    jobs = [job("a"), job("b", prepare=lambda: True, estimate_s=120.0),
            job("c", fails=True), job("d", prepare=lambda: False),
            # a fresh run folder, but the shared teacher's fine-tuning went on
            # from its cache entry's epoch backup: its seconds are a share
            job("e", prepare=lambda: False,
                report={"teacher": {"finetune": {"resumed_at_epoch": 2}}})]
    failures = benchlib.run_jobs(jobs, results, lambda: saved.append(1),
                                 lambda: rendered.append(1))
    out = capsys.readouterr().out
    assert failures == 1
    assert "a: stored result kept (accuracy 0.50)" in out
    assert "b: resuming (estimate ~2.0 min)" in out and "d: running\n" in out
    assert "c: FAILED after" in out and "out of memory" in out
    entries = results["results"]
    assert entries["a"] == {"accuracy": 0.5, "budget": 1}  # kept as stored
    assert entries["b"]["resumed"] is True and entries["b"]["accuracy"] == 0.75
    assert "resumed" not in entries["d"]
    assert entries["e"]["resumed"] is True
    assert entries["e"]["resumed_parts"] == {"teacher fine-tuning": "resumed after epoch 2"}
    assert entries["c"]["row"] == "c" and "out of memory" in entries["c"]["error"]
    assert len(saved) == 4  # b, c, d, e


def test_padding_stats_counts_one_epoch_by_hand():
    import tensorflow as tf

    masks = [tf.constant([[1, 1, 0, 0], [1, 0, 0, 0]]), tf.constant([[1, 1, 1, 1, 1, 0]])]
    batches = [({"m": m}, tf.zeros(len(m))) for m in masks]
    fraction, fed, real, widths = benchlib.padding_stats(batches, "m")
    assert (fed, real, widths) == (14, 8, {4: 1, 6: 1})
    assert fraction == 1 - 8 / 14


def test_interleaved_rates_alternate_the_order_and_cycle_the_batches():
    calls = []

    class Model:
        def __init__(self, name):
            self.name = name

        def train_on_batch(self, x, y):
            calls.append((self.name, x))

    batches = {"a": [(0, [1, 2]), (1, [1, 2])], "b": [(0, [1]), (1, [1]), (2, [1])]}
    rates = benchlib.interleaved_rates({"a": Model("a"), "b": Model("b")}, batches,
                                       rounds=2, steps=2)
    assert calls == [("a", 0), ("a", 1), ("b", 0), ("b", 1),  # round 0: a, b
                     ("b", 2), ("b", 0), ("a", 0), ("a", 1)]  # round 1: b, a
    assert len(rates["a"]) == len(rates["b"]) == 2 and min(rates["a"] + rates["b"]) > 0


CAMPAIGN = """
import sys
sys.path.insert(0, sys.argv[1])
import benchlib
with open(sys.argv[2], "w") as log:
    benchlib.run_child([sys.executable, "-c",
                        "import os, time; print(os.getpid(), flush=True); time.sleep(60)"],
                       log)
"""


def test_run_child_kills_its_child_when_the_campaign_is_terminated(tmp_path):
    """SIGTERM to a bench process (a campaign stopped to free the cores)
    must not leave its `kdplug run` child running beside the next job."""
    log = tmp_path / "child.log"
    campaign = subprocess.Popen([sys.executable, "-c", CAMPAIGN,
                                 BENCH, str(log)])
    deadline = time.monotonic() + 30
    while not log.exists() or not log.read_text().strip():
        assert time.monotonic() < deadline and campaign.poll() is None
        time.sleep(0.05)
    child = int(log.read_text().split()[0])
    campaign.send_signal(signal.SIGTERM)
    assert campaign.wait(timeout=30) == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):  # killed and reaped, not orphaned
        os.kill(child, 0)


def test_time_cell_leaves_resumed_runs_out():
    """A resumed run's time is its last process's part: never a timing."""
    entries = [{"train_s": 300.0}, {"train_s": 90.0, "resumed": True},
               {"train_s": 500.0}]
    assert benchlib.time_cell(entries) == "300"
    assert benchlib.time_cell(entries, pick=lambda v: sum(v) / len(v)) == "400"
    assert benchlib.time_cell([{"wall_s": 9.0, "resumed": True}], "wall_s") == "–"


def test_run_jobs_waits_while_the_pause_file_exists(tmp_path, monkeypatch, capsys):
    """No run starts while the pause file exists; the run after it is a
    whole run (not marked resumed), its wall time starting after the wait."""
    from benchlib import runs

    pause = tmp_path / "bench.pause"
    pause.write_text("")
    started, sleeps = [], []

    def sleep(seconds):  # the pause is lifted while the campaign waits
        sleeps.append(seconds)
        pause.unlink()

    monkeypatch.setattr(runs.time, "sleep", sleep)
    job = benchlib.Job("a", lambda: started.append(pause.exists()) or {"accuracy": 0.5},
                       summarise=lambda report, wall: dict(report),
                       describe=lambda e: "done", keep=lambda stored: True,
                       failure={"row": "a"})
    results = {"results": {}}
    assert benchlib.run_jobs([job], results, lambda: None, lambda: None,
                             pause_file=str(pause)) == 0
    assert sleeps == [10.0] and started == [False]
    assert "resumed" not in results["results"]["a"]
    out = capsys.readouterr().out
    assert f"paused: remove {pause} to go on" in out and out.index("resumed") < out.index("a: running")


@pytest.mark.parametrize("script", ["throughput", "fused_adam", "cli_startup",
                                    "cache_memory", "length_buckets", "precision",
                                    "seq2seq_decoding"])
def test_render_only_without_a_stored_measurement_names_the_file(script, tmp_path):
    """Every script that measures once (`benchlib.measurement_section`)
    stops with the missing results file named, before it writes a page."""
    missing, page = tmp_path / f"{script}.json", tmp_path / "performance.md"
    with pytest.raises(SystemExit, match=f"no stored measurement at {missing}"):
        load_bench_script(script).main(["--render-only", "--results", str(missing),
                                        "--write-docs", str(page)])
    assert not page.exists()
