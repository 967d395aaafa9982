"""Real pip-installed third-party plugins that break (a mis-signatured hook,
`sys.exit()` at import) never stop kdplug: `kdplug plugins` reports them,
built-in methods still validate and run.

The two packages in tests/fixtures/plugins/ are installed with pip into a
folder of the test's own, put on `PYTHONPATH` of the subprocesses only, so
the environment other tests see is never changed."""

import os
import pathlib
import subprocess
import sys

import pytest
import yaml

from kdplug.testing.toy_config import write_toy_config

# pip installs and `kdplug` subprocesses (the module's `site`: about 5 s).
pytestmark = pytest.mark.slow

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "plugins"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    for name in ("kdplug_badsig", "kdplug_exits"):
        # built from a copy, so no build/ or egg-info lands in the repository
        src = build / name
        subprocess.run(["cp", "-r", str(FIXTURES / name), str(src)], check=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
             "--no-build-isolation", "--no-index", "--target", str(target), str(src)],
            check=True, capture_output=True)
    return target


def kdplug(site, *args):
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, "-m", "kdplug.cli", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_plugins_lists_both_as_failed_with_their_reasons(site):
    result = kdplug(site, "plugins")
    assert result.returncode == 1, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "kdplug-badsig  failed" in rows["badsig"]
    assert "PluginValidationError" in rows["badsig"] and "'cfg'" in rows["badsig"]
    assert "kdplug-exits   failed" in rows["exits"]
    assert "called sys.exit('kdplug_exits refuses to load') while loading" in rows["exits"]
    assert " ok " in rows["kd"] and " ok " in rows["students"]
    assert "Traceback" not in result.stdout + result.stderr


def test_builtin_methods_still_validate_and_run(site, tmp_path):
    path = write_toy_config(tmp_path, {"name": "kd"}, num_examples=48,
                            teacher={"finetune": None}, training={"epochs": 1},
                            student={"kind": "truncated", "layers": [1]}, export=False)
    assert kdplug(site, "validate", path).returncode == 0
    result = kdplug(site, "run", path)
    assert result.returncode == 0, result.stderr
    assert "student accuracy" in result.stdout

    doc = yaml.safe_load(open(path))
    doc["method"] = {"name": "badsig-kd"}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    result = kdplug(site, "validate", str(bad))
    assert result.returncode == 2
    [line] = [x for x in result.stderr.splitlines() if x.startswith("kdplug: error:")]
    assert f"{bad}: method.name: unknown method 'badsig-kd'" in line
    assert "comes from plugin 'badsig' (kdplug-badsig), which failed to load" in line
    assert "Traceback" not in result.stderr
