"""What a run prints: kdplug's log lines, progress, no TensorFlow noise."""

import io
import logging
import subprocess
import sys

import pytest

from kdplug.run import console
from kdplug.training.callbacks import progress_line


@pytest.mark.parametrize("tty, setting, verbosity, lines", [
    (True, "auto", 1, False), (False, "auto", 0, True),
    (False, 0, 0, False), (True, 1, 1, False), (False, 2, 2, False)])
def test_progress_bar_only_on_a_terminal(monkeypatch, tty, setting, verbosity, lines):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty, raising=False)
    assert progress_line.keras_verbosity(setting) == verbosity
    assert progress_line.wants_progress_lines(setting) is lines
    [shown] = progress_line.progress_lines("distill", setting)  # else kdplug's bar
    assert type(shown).__name__ == ("ProgressLine" if lines else "ProgressBar")


def test_progress_logger_logs_at_most_once_per_interval_and_at_the_end():
    times = iter([0.0, 10.0, 70.0, 80.0, 95.0])  # start, then one per call
    log = logging.getLogger("kdplug.test.progress")
    records = []
    log.info = lambda fmt, *args: records.append(fmt % args)
    progress = console.progress_logger(log, "soft labels (train)", interval=60.0,
                                       clock=lambda: next(times))
    for done in (64, 1280, 2000, 2500):  # at 10, 70, 80 and 95 s
        progress(done, 2500)
    assert records == ["soft labels (train): 1,280 of 2,500 examples (51%), 70 s",
                       "soft labels (train): 2,500 of 2,500 examples (100%), 95 s"]


def test_messages_are_kdplug_lines_and_handlers_are_not_doubled():
    stream = io.StringIO()
    console.configure_logging(stream=stream)
    console.configure_logging(stream=stream)
    logging.getLogger("kdplug.run").info("stage %s: done", "distill")
    logging.getLogger("kdplug.run").debug("hidden")
    assert stream.getvalue() == "kdplug: stage distill: done\n"
    console.configure_logging(verbose=True, stream=stream)
    logging.getLogger("kdplug.run").debug("shown")
    assert stream.getvalue().endswith("kdplug: shown\n")
    logging.getLogger("kdplug").handlers.clear()


def import_tensorflow(verbose):
    code = ("from kdplug.run.console import import_tensorflow_quietly\n"
            f"import_tensorflow_quietly(verbose={verbose})\n"
            "import tensorflow as tf\ntf.constant(1.0) + 1.0\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})


@pytest.mark.slow
def test_tensorflow_start_up_noise_is_hidden_unless_verbose():
    quiet = import_tensorflow(False)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = import_tensorflow(True)
    assert loud.returncode == 0
    assert "absl::InitializeLog" in loud.stderr or "cuda" in loud.stderr.lower()


def test_kdplug_warnings_print_as_kdplug_lines_others_as_before(monkeypatch):
    import warnings

    from kdplug.data import readers

    stream = io.StringIO()
    console.configure_logging(stream=stream)
    shown = []

    def python_default(message, *args, **kwargs):
        shown.append(str(message))

    monkeypatch.setattr(warnings, "showwarning", python_default)
    kdplug_file = readers.__file__
    with console.warnings_as_messages():
        warnings.showwarning(UserWarning("skipped 1 bad row(s)"), UserWarning,
                             kdplug_file, 1)
        warnings.showwarning(UserWarning("elsewhere"), UserWarning, "/tmp/other.py", 1)
        warnings.showwarning(DeprecationWarning("old"), DeprecationWarning,
                             kdplug_file, 1)
    assert warnings.showwarning is python_default  # put back after the block
    assert stream.getvalue() == "kdplug: warning: skipped 1 bad row(s)\n"
    assert shown == ["elsewhere", "old"]
    logging.getLogger("kdplug").handlers.clear()
