"""Lazy package exports: names imported from their module on first use.

A package whose modules need TensorFlow lists its public names here instead
of importing them, so that importing the package (for a config class, the
cache commands, a plugin's declaration) stays cheap (PEP 562). A name's
first use imports its module without TensorFlow's start-up noise
(`quiet_tensorflow_start`, which the CLI's `kdplug.run.console` uses too).

Examples:

```python
# in kdplug/teacher/__init__.py
__getattr__, __dir__ = lazy_exports(__name__, {
    "TeacherCache": "kdplug.teacher.output_cache",
})
```
"""

import contextlib
import importlib
import os
import sys
import types


class _ExportingPackage(types.ModuleType):
    """A package whose exported name is also one of its submodules'
    (`kdplug.students.truncated_bert`, the function, lives in the module
    `kdplug.students.truncated_bert`): when the import system binds the
    submodule on the package, the exported attribute is bound instead, as
    an eager `from .truncated_bert import truncated_bert` would leave it."""

    def __setattr__(self, name, value):
        shadowed = self.__dict__.get("_lazy_shadowed", {})
        if isinstance(value, types.ModuleType) and shadowed.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


def lazy_exports(package, table):
    """`(__getattr__, __dir__)` for `package` exporting `table`'s names
    (`{name: module}`, or `{name: "module:attribute"}` for a name exported
    under another one); a resolved name is cached in the package."""
    shadowed = {name: target for name, target in table.items()
                if target == f"{package}.{name}"}
    if shadowed:
        module = sys.modules[package]
        module._lazy_shadowed = shadowed
        module.__class__ = _ExportingPackage

    def __getattr__(name):
        if name in table:
            module, _, attribute = table[name].partition(":")
            with quiet_tensorflow_start():
                value = getattr(importlib.import_module(module), attribute or name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__


@contextlib.contextmanager
def quiet_tensorflow_start():
    """Runs the block (an import that may import TensorFlow: kdplug's lazy
    exports) without TensorFlow's start-up noise, as the CLI does: file
    descriptor 2 points at /dev/null while it runs, unless TensorFlow is
    already imported or the user asked for TensorFlow's logs
    (`TF_CPP_MIN_LOG_LEVEL` 0 or 1; `import kdplug` sets 3 when it is
    unset).

    Examples:

    ```python
    with quiet_tensorflow_start():
        module = importlib.import_module("kdplug.training.distiller")
    ```
    """
    if ("tensorflow" in sys.modules
            or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3") in ("0", "1")):
        yield
        return
    with stderr_to_devnull():
        yield


@contextlib.contextmanager
def stderr_to_devnull():
    """File descriptor 2 (what C++ code and absl print to, beneath
    `sys.stderr`) pointed at /dev/null while the block runs."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)
