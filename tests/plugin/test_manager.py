import importlib.metadata
import types

import pytest

import kdplug
from kdplug import PluginError
from kdplug.plugin.manager import PluginManager


def method_plugin(name, method_name, hook="kdplug_register_methods", fail=False):
    class M(kdplug.Method):
        pass

    M.name = method_name

    def register_hook(register):
        register(M)
        if fail:
            raise RuntimeError("boom while registering")

    module = types.ModuleType(name)
    setattr(module, hook, kdplug.hookimpl(register_hook))
    return module


def test_builtin_plugins_load_through_entry_points():
    pm = PluginManager()
    names = {r.name: r for r in pm.records}
    assert names["kd"].status == "ok" and names["kd"].source == "kdplug"
    assert "kd" in pm.methods and "truncated" in pm.students
    assert pm.methods.source("kd") == "kdplug"


def test_broken_plugin_is_isolated_and_reported():
    pm = PluginManager(load_entrypoints=False)
    good = pm.register(method_plugin("good", "good-method"), "good", "pkg-good")
    bad = pm.register(method_plugin("bad", "bad-method", fail=True), "bad", "pkg-bad")
    after = pm.register(method_plugin("after", "after-method"), "after", "pkg-after")
    assert good.status == "ok" and after.status == "ok"
    assert bad.status == "failed" and "boom while registering" in bad.error
    assert pm.methods.names() == ["after-method", "good-method"]  # nothing half-registered
    assert pm.failed() == [bad]


def test_unknown_hook_name_fails_with_suggestion():
    pm = PluginManager(load_entrypoints=False)
    record = pm.register(
        method_plugin("typo", "typo-method", hook="kdplug_register_method"), "typo", "pkg"
    )
    assert record.status == "failed"
    assert "unknown hook 'kdplug_register_method'" in record.error
    assert "kdplug_register_methods" in record.error
    assert "typo-method" not in pm.methods


def test_duplicate_names_name_both_sources():
    pm = PluginManager(load_entrypoints=False)
    pm.register(method_plugin("a", "same"), "a", "pkg-a")
    record = pm.register(method_plugin("b", "same"), "b", "pkg-b")
    assert record.status == "failed"
    assert "'pkg-a'" in record.error and "'pkg-b'" in record.error
    with pytest.raises(PluginError, match="ambiguous.*pkg-a.*pkg-b"):
        pm.methods.get("same")


def test_import_failure_of_an_entry_point_is_isolated(monkeypatch):
    broken = importlib.metadata.EntryPoint(
        name="broken", value="kdplug_no_such_module_xyz", group="kdplug.plugins")
    real = importlib.metadata.entry_points

    def fake_entry_points(group):
        return list(real(group=group)) + [broken]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    pm = PluginManager()
    record = {r.name: r for r in pm.records}["broken"]
    assert record.status == "failed"
    assert "ModuleNotFoundError" in record.error
    assert "kd" in pm.methods  # the others still load


def test_unknown_name_suggests_nearest():
    pm = PluginManager()
    with pytest.raises(KeyError, match="did you mean 'kd'"):
        pm.methods.get("kdd")


def test_class_without_name_is_rejected():
    class Nameless(kdplug.Method):
        name = ""

    module = types.ModuleType("nameless")
    module.kdplug_register_methods = kdplug.hookimpl(lambda register: register(Nameless))
    record = PluginManager(load_entrypoints=False).register(module, "nameless")
    assert record.status == "failed" and "no `name`" in record.error


def test_callbacks_hook_collects_plugin_callbacks():
    import keras

    module = types.ModuleType("cb")
    module.kdplug_callbacks = kdplug.hookimpl(
        lambda config: [keras.callbacks.History()])
    pm = PluginManager(load_entrypoints=False)
    pm.register(module, "cb")
    results = pm.hook.kdplug_callbacks(config=None)
    assert len(results) == 1 and isinstance(results[0][0], keras.callbacks.History)


def test_mis_signatured_hook_fails_and_registers_nothing():
    calls = []
    module = method_plugin("badsig", "badsig-method")
    module.kdplug_callbacks = kdplug.hookimpl(lambda cfg: calls.append(cfg) or [])
    pm = PluginManager(load_entrypoints=False)
    good = pm.register(method_plugin("good", "good-method"), "good", "pkg-good")
    record = pm.register(module, "badsig", "pkg-badsig")
    assert good.status == "ok" and record.status == "failed"
    assert record.error.startswith("pluggy._manager.PluginValidationError: ")
    assert "kdplug_callbacks" in record.error and "'cfg'" in record.error
    assert pm.methods.names() == ["good-method"]
    assert pm.hook.kdplug_callbacks(config=None) == [] and calls == []
    with pytest.raises(KeyError) as e:
        pm.methods.get("badsig-method")
    assert ("method 'badsig-method' comes from plugin 'badsig' (pkg-badsig), which "
            "failed to load: pluggy._manager.PluginValidationError") in e.value.args[0]


def test_sys_exit_in_a_register_hook_is_isolated_and_rolled_back():
    calls = []

    def register_and_exit(register):
        register(type("Half", (kdplug.Method,), {"name": "half-method"}))
        raise SystemExit(4)

    module = types.ModuleType("exits")
    module.kdplug_register_methods = kdplug.hookimpl(register_and_exit)
    module.kdplug_callbacks = kdplug.hookimpl(lambda config: calls.append(1) or [])
    pm = PluginManager(load_entrypoints=False)
    record = pm.register(module, "exits", "pkg-exits")
    assert record.status == "failed" and record.error == "called sys.exit(4) while loading"
    assert "half-method" not in pm.methods
    assert pm.hook.kdplug_callbacks(config=None) == [] and calls == []


def test_sys_exit_at_import_is_isolated_and_named_in_unknown_name_errors(
        monkeypatch, tmp_path):
    (tmp_path / "kdplug_test_exits_xyz.py").write_text(
        "import sys\nsys.exit('no thanks')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    exits = importlib.metadata.EntryPoint(
        name="exits", value="kdplug_test_exits_xyz", group="kdplug.plugins")
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: list(real(group=group)) + [exits])
    pm = PluginManager()
    record = {r.name: r for r in pm.records}["exits"]
    assert record.status == "failed"
    assert record.error == "called sys.exit('no thanks') while loading"
    assert "kd" in pm.methods and "truncated" in pm.students
    with pytest.raises(KeyError) as e:
        pm.students.get("tiny-lstm")
    assert ("note: plugin 'exits' (kdplug_test_exits_xyz) failed to load: called "
            "sys.exit('no thanks') while loading, and may provide it") in e.value.args[0]


def test_keyboard_interrupt_is_not_swallowed():
    def interrupted(register):
        raise KeyboardInterrupt

    module = types.ModuleType("ctrl_c")
    module.kdplug_register_methods = kdplug.hookimpl(interrupted)
    with pytest.raises(KeyboardInterrupt):
        PluginManager(load_entrypoints=False).register(module, "ctrl_c")
