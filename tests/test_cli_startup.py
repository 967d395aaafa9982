"""The commands that only read (`--help`, `validate`, `plugins`, `cache ls`)
never import TensorFlow, Keras or keras-hub; `kdplug.load_model` still
finds every plugin's Keras classes although no plugin imports them when it
loads. Each case runs in a fresh interpreter, as the `kdplug` command does.
"""

import json
import os
import subprocess
import sys

import pytest

from kdplug.testing.toy_config import write_toy_config

HEAVY = ("tensorflow", "keras", "keras_hub")

METHODS = {
    "kd": {"name": "kd"},
    "tinybert": {"name": "tinybert"},
    "fastbert": {"name": "fastbert", "branch_dim": 8},
    "mtdnn": {"name": "mtdnn-ensemble", "tasks": [{"name": "toy"}]},
    "bilstm": {"name": "bilstm"},
}


def run_cli(args, tmp_path):
    """`main(args)` in a fresh interpreter: `(exit status, heavy modules
    imported, stdout)`."""
    code = (
        "import json, sys\n"
        "from kdplug.cli import main\n"
        "try:\n"
        f"    status = main({list(args)!r})\n"
        "except SystemExit as e:\n"
        "    status = e.code\n"
        f"print(json.dumps([status, [m for m in {HEAVY!r} if m in sys.modules]]))\n")
    env = dict(os.environ, KDPLUG_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    status, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    return status, heavy, done.stdout


@pytest.mark.parametrize("args", [["--help"], ["plugins"], ["cache", "ls"]],
                         ids=" ".join)
def test_read_only_commands_do_not_import_tensorflow(args, tmp_path):
    status, heavy, out = run_cli(args, tmp_path)
    assert status == 0 and heavy == [], out
    if args == ["plugins"]:  # every built-in plugin loaded, none failed
        assert "failed" not in out and "method:tinybert" in out


@pytest.mark.parametrize("method", sorted(METHODS))
def test_validate_does_not_import_tensorflow(method, tmp_path):
    student = {"kind": "bilstm"} if method == "bilstm" else None
    path = write_toy_config(tmp_path, METHODS[method],
                            **({"student": student} if student else {}))
    status, heavy, out = run_cli(["validate", path], tmp_path)
    assert status == 0, out
    assert heavy == [], f"validate {method} imported {heavy}"
    assert f"{path}: OK" in out


@pytest.mark.slow
def test_load_model_registers_plugin_classes_in_a_fresh_process(tmp_path):
    # An early-exit student is a FastBERT class; nothing imports the
    # plugin's model modules before load_model.
    fixture = os.path.join(os.path.dirname(__file__), "fixtures", "release_0_1",
                           "early_exit_bert.keras")
    code = ("import kdplug, sys\n"
            "assert 'kdplug_plugins.fastbert.early_exit_classifier' not in sys.modules\n"
            f"model = kdplug.load_model({fixture!r})\n"
            "print(type(model).__name__)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "EarlyExitBertClassifier"
