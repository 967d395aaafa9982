"""Plugin discovery: entry points, isolation of failures, registries."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import logging
import pkgutil
import threading
import traceback
from typing import TYPE_CHECKING
from typing import Any
from typing import Optional

import pluggy

from kdplug.errors import PluginError
from kdplug.errors import did_you_mean
from kdplug.plugin import hookspecs
from kdplug.plugin.registry import Registry

if TYPE_CHECKING:
    from kdplug.data.augmentation import Augmenter
    from kdplug.mapping.layer_mapping import LayerMapping
    from kdplug.plugin.configurable import Configurable
    from kdplug.plugin.method import Method
    from kdplug.plugin.student_kind import StudentKind

ENTRY_POINT_GROUP = "kdplug.plugins"

log = logging.getLogger("kdplug.plugins")

# hook name -> registry kind
REGISTRATION_HOOKS = {
    "kdplug_register_methods": "method",
    "kdplug_register_students": "student",
    "kdplug_register_augmenters": "augmenter",
    "kdplug_register_mappings": "mapping",
}


@dataclasses.dataclass
class PluginRecord:
    """What `kdplug plugins` shows for one plugin."""

    name: str
    source: str
    status: str = "ok"
    error: str = ""
    registered: list[str] = dataclasses.field(default_factory=list)


class PluginManager:
    """Loads kdplug plugins and holds what they register.

    Every plugin, built-in or third party, comes through the same path: an
    entry point in the `kdplug.plugins` group (or a direct `register()` call in
    tests). Importing it, pluggy's validation of its hooks (e.g. a hook with
    a wrong argument name), collecting what it registers and committing that
    to the registries all run inside one isolation: any exception there but
    `KeyboardInterrupt` (an import error, `sys.exit()` at import, a
    `BaseException` subclass of the plugin's own, a raising hook, a name
    another plugin owns) records the plugin as failed with the
    reason, rolls back its registry entries and its pluggy registration (its
    `kdplug_callbacks` never runs), and every other plugin still loads. A
    lookup of a name such a plugin registers, or might register, says so.

    Args:
        load_entrypoints: load every installed `kdplug.plugins` entry point.

    Examples:

    ```python
    pm = PluginManager(load_entrypoints=False)
    pm.register(my_plugin_module, name="mine", source="tests")
    pm.methods.get("my-method")
    ```
    """

    def __init__(self, load_entrypoints: bool = True) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        self.records: list[PluginRecord] = []
        self.registries: dict[str, Registry[Any]] = {
            kind: Registry(kind) for kind in REGISTRATION_HOOKS.values()
        }
        if load_entrypoints:
            self.load_entrypoints()

    @property
    def methods(self) -> Registry[Method]:
        return self.registries["method"]

    @property
    def students(self) -> Registry[StudentKind]:
        return self.registries["student"]

    @property
    def augmenters(self) -> Registry[Augmenter]:
        return self.registries["augmenter"]

    @property
    def mappings(self) -> Registry[LayerMapping]:
        return self.registries["mapping"]

    @property
    def hook(self) -> Any:
        """pluggy's hook caller (`pm.hook.kdplug_callbacks(config=...)`)."""
        return self._pm.hook

    def load_entrypoints(self, group: str = ENTRY_POINT_GROUP) -> None:
        for ep in sorted(
            importlib.metadata.entry_points(group=group), key=lambda e: e.name
        ):
            source = ep.dist.name if ep.dist is not None else ep.value
            try:
                plugin = ep.load()
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # isolate any import-time failure
                self._fail(PluginRecord(name=ep.name, source=source), e, [])
                continue
            self.register(plugin, name=ep.name, source=source)

    def register(self, plugin: object, name: str,
                 source: str = "<direct>") -> PluginRecord:
        """Registers one plugin; returns its `PluginRecord`."""
        record = PluginRecord(name=name, source=source)
        pending = []
        registered = False
        try:
            self._check_hook_names(plugin)
            pending = self._collect(plugin)
            self._pm.register(plugin, name=name)  # pluggy validates the hooks
            registered = True
            self._commit(pending, source, record)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # SystemExit, a plugin's own BaseException
            if registered:
                self._pm.unregister(name=name)
            return self._fail(record, e, pending)
        self.records.append(record)
        return record

    def failed(self) -> list[PluginRecord]:
        return [r for r in self.records if r.status != "ok"]

    def import_modules(self) -> None:
        """Imports every module of every loaded plugin package.

        Plugins import their Keras code (models, terms) when a run first
        needs it, not when they load, so that `kdplug plugins` and
        `kdplug validate` start without TensorFlow. A saved model names its
        classes, which Keras finds only once their modules ran:
        `kdplug.load_model` calls this first. A module that fails to import
        is logged and skipped (its plugin's other classes still load).
        """
        for name, plugin in self._pm.list_name_plugin():
            import_package_modules(getattr(plugin, "__name__", None),
                                   f"plugin {name!r}")

    def _check_hook_names(self, plugin: object) -> None:
        known = [n for n in dir(hookspecs) if n.startswith("kdplug_")]
        for attr in dir(plugin):
            if attr.startswith("kdplug_") and attr not in known:
                raise PluginError(
                    f"unknown hook {attr!r}{did_you_mean(attr, known)}"
                )

    def _collect(self, plugin: object) -> list[tuple[str, type[Configurable]]]:
        pending: list[tuple[str, type[Configurable]]] = []
        for hook_name, kind in REGISTRATION_HOOKS.items():
            impl = getattr(plugin, hook_name, None)
            if impl is None:
                continue
            impl(register=lambda cls, kind=kind: pending.append((kind, cls)))
        return pending

    def _commit(self, pending: list[tuple[str, type[Configurable]]], source: str,
                record: PluginRecord) -> None:
        added = []
        try:
            for kind, cls in pending:
                self.registries[kind].add(cls, source)
                added.append((kind, cls))
                record.registered.append(f"{kind}:{cls.name}")
        except PluginError:
            for kind, cls in added:  # roll back this plugin's entries
                self.registries[kind].remove(cls.name)
            raise

    def _fail(self, record: PluginRecord, error: BaseException,
              pending: list[tuple[str, type[Configurable]]]) -> PluginRecord:
        """Records `record` as failed; tells every registry, naming what the
        plugin would have registered when that is known."""
        record.status = "failed"
        record.registered = []
        record.error = failure_reason(error)
        self.records.append(record)
        names: dict[str, list[Optional[str]]] = {}
        for kind, cls in pending:
            names.setdefault(kind, []).append(getattr(cls, "name", None))
        for kind, registry in self.registries.items():
            registry.note_failure(record, names.get(kind, ()))
        return record


def failure_reason(error: BaseException) -> str:
    """One line saying why a plugin failed: the exception's type and message
    (`SystemExit` as the exit it asked for)."""
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r}) while loading"
    detail = "".join(traceback.format_exception_only(type(error), error)).strip()
    return " ".join(detail.split())


def import_package_modules(package: Optional[str], owner: Optional[str] = None) -> None:
    """Imports `package` (a module name) and, if it is a package, every
    module below it; failures (any exception but `KeyboardInterrupt`) are
    logged as warnings naming `owner`."""
    if not package:
        return
    try:
        module = importlib.import_module(package)
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        log.warning("%s: %s did not import: %s", owner or package, package,
                    failure_reason(e))
        return
    for info in pkgutil.walk_packages(getattr(module, "__path__", ()), package + "."):
        try:
            importlib.import_module(info.name)
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            log.warning("%s: %s did not import: %s", owner or package, info.name,
                        failure_reason(e))


_default: Optional[PluginManager] = None
_default_lock = threading.Lock()


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, loading entry points on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = PluginManager()
        return _default
