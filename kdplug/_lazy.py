"""Lazy package exports: names imported from their module on first use.

A package whose modules need TensorFlow lists its public names here instead
of importing them, so that importing the package (for a config class, the
cache commands, a plugin's declaration) stays cheap (PEP 562).

Examples:

```python
# in kdplug/teacher/__init__.py
__getattr__, __dir__ = lazy_exports(__name__, {
    "TeacherCache": "kdplug.teacher.output_cache",
})
```
"""

import importlib
import sys


def lazy_exports(package, table):
    """`(__getattr__, __dir__)` for `package` exporting `table`'s names
    (`{name: module}`); a resolved name is cached in the package."""

    def __getattr__(name):
        if name in table:
            value = getattr(importlib.import_module(table[name]), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
