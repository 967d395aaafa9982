"""Lazy package exports: names imported from their module on first use.

A package whose modules need TensorFlow imports its public names under
`if TYPE_CHECKING:` instead of importing them, so that importing the
package (for a config class, the cache commands, a plugin's declaration)
stays cheap (PEP 562), while IDEs and type checkers read those imports as
they read any other. `lazy_exports` reads the same imports from the
package's source and loads each name from its module on first use, without
TensorFlow's start-up noise (`quiet_tensorflow_start`, which the CLI's
`kdplug.run.console` uses too).

Examples:

```python
# in kdplug/teacher/__init__.py
if TYPE_CHECKING:
    from kdplug.teacher.output_cache import TeacherCache

__getattr__, __dir__ = lazy_exports(__name__)
```
"""

import ast
import contextlib
import importlib
import os
import sys
import types


# Whether `import kdplug` chose TensorFlow's C++ log level (the user had set
# none), so that `kdplug -v` may lower it to show everything.
tf_log_level_is_kdplugs = False


def quiet_tensorflow_logs():
    """TensorFlow's C++ log output: errors only (`TF_CPP_MIN_LOG_LEVEL=3`)
    unless the user set a level; remembers whether it chose
    (`tf_log_level_is_kdplugs`). `import kdplug` calls it before anything
    can import TensorFlow."""
    global tf_log_level_is_kdplugs
    tf_log_level_is_kdplugs = "TF_CPP_MIN_LOG_LEVEL" not in os.environ
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


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


def lazy_exports(package):
    """`(__getattr__, __dir__, __all__)` for `package`: it exports the names
    it imports under `if TYPE_CHECKING:` (`type_checking_imports`), each
    loaded on first use and then cached in the package; its `__all__` lists
    those and the names it imports from its own modules.

    Args:
        package: the package's `__name__`.
    """
    path = sys.modules[package].__file__
    table = type_checking_imports(path)
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

    return __getattr__, __dir__, sorted({*table, *own_imports(path, package)})


def type_checking_imports(path):
    """`{name: module}` (`{name: "module:attribute"}` for a name imported
    under another one) of the `from ... import` statements in the
    module-level `if TYPE_CHECKING:` blocks of the source file `path`."""
    table = {}
    for block in _parse(path).body:
        if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING"):
            for node in block.body:
                for alias in getattr(node, "names", ()):
                    renamed = alias.asname not in (None, alias.name)
                    table[alias.asname or alias.name] = (
                        f"{node.module}:{alias.name}" if renamed else node.module)
    return table


def own_imports(path, package):
    """The names the source file `path` imports at module level from the
    public modules of `package` (`from package.module import name`)."""
    return [alias.asname or alias.name for node in _parse(path).body
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith(package + ".")
            and "._" not in node.module for alias in node.names]


def _parse(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


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
