"""What a run prints: kdplug's log lines, progress, no TensorFlow noise."""

import io
import logging
import subprocess
import sys

import pytest

from kdplug.run import console


@pytest.mark.parametrize("tty, setting, verbosity, lines", [
    (True, "auto", 1, False), (False, "auto", 0, True),
    (False, 0, 0, False), (True, 1, 1, False), (False, 2, 2, False)])
def test_progress_bar_only_on_a_terminal(monkeypatch, tty, setting, verbosity, lines):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty, raising=False)
    assert console.keras_verbosity(setting) == verbosity
    assert console.wants_progress_lines(setting) is lines
    assert len(console.progress_lines("distill", setting)) == int(lines)


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


def test_tensorflow_start_up_noise_is_hidden_unless_verbose():
    quiet = import_tensorflow(False)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = import_tensorflow(True)
    assert loud.returncode == 0
    assert "absl::InitializeLog" in loud.stderr or "cuda" in loud.stderr.lower()
