"""Old import paths of kdplug 0.1, kept working until 0.4.0 removes them.

kdplug 0.2 grouped the flat top level by concern (docs/architecture.md).
Importing a module by its 0.1 name (`kdplug.train`, `kdplug.cache`, ...)
still works: it returns a module that finds each name in the module(s) that
now hold it, and warns once with a `DeprecationWarning` naming the new path.

Examples:

```python
from kdplug.cache import TeacherCache                # 0.1 path: works, warns
from kdplug.teacher.output_cache import TeacherCache  # the path since 0.2
```
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

# 0.1 module -> the 0.2 modules that hold its public names (searched in order).
MOVED = {
    "kdplug.augment": ("kdplug.data.augmentation",),
    "kdplug.cache": ("kdplug.teacher.output_cache", "kdplug.teacher.cache_admin",
                     "kdplug.teacher.fingerprints"),
    "kdplug.callbacks": ("kdplug.training.callbacks",),
    "kdplug.configurable": ("kdplug.plugin.configurable",),
    "kdplug.distiller": ("kdplug.training.distiller", "kdplug.keys"),
    "kdplug.export": ("kdplug.evaluation.export",),
    "kdplug.finetune": ("kdplug.teacher.finetune",),
    "kdplug.fingerprint": ("kdplug.storage",),
    "kdplug.hookspecs": ("kdplug.plugin.hookspecs",),
    "kdplug.method": ("kdplug.plugin.method", "kdplug.plugin.student_kind"),
    "kdplug.model_table": ("kdplug.evaluation.model_table",),
    "kdplug.multi_worker": ("kdplug.training.custom_loop",),
    "kdplug.plots": ("kdplug.evaluation.plots",),
    "kdplug.plugins": ("kdplug.plugin.manager",),
    "kdplug.registry": ("kdplug.plugin.registry",),
    "kdplug.report": ("kdplug.evaluation.measure", "kdplug.evaluation.report"),
    "kdplug.schedules": ("kdplug.training.optimizers",),
    "kdplug.schema": ("kdplug.config.schema",),
    "kdplug.strategy": ("kdplug.training.distribution", "kdplug.training.clipping"),
    "kdplug.teacher_pipeline": ("kdplug.teacher.pipeline",),
    "kdplug.term_schedule": ("kdplug.training.term_schedule",
                             "kdplug.config.sections"),
    "kdplug.train": ("kdplug.run.experiment", "kdplug.run.stage_runner",
                     "kdplug.run.single_task"),
    "kdplug.transfer_set": ("kdplug.data.transfer_set",),
}


class _MovedModule(types.ModuleType):
    """Looks each attribute up in the modules that now hold it."""

    def __init__(self, name, targets):
        super().__init__(name)
        self.__targets = targets
        self.__doc__ = f"Moved in kdplug 0.2: see {', '.join(targets)}."

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        for target in self.__targets:
            module = importlib.import_module(target)
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(
            f"module {self.__name__!r} has no attribute {attr!r} (moved to "
            f"{', '.join(self.__targets)} in kdplug 0.2)")

    def __dir__(self):
        names = set()
        for target in self.__targets:
            names.update(n for n in dir(importlib.import_module(target))
                         if not n.startswith("_"))
        return sorted(names)


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        targets = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved in kdplug 0.2; import from {' / '.join(targets)} "
            "(the old path works for one release)", DeprecationWarning, stacklevel=3)
        return _MovedModule(spec.name, targets)

    def exec_module(self, module):
        pass


def install():
    """Adds the finder once (called by `kdplug/__init__.py`)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
