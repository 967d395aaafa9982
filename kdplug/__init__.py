"""kdplug: plugin-based knowledge distillation for Keras 3.

Public API:

- `Distiller`: a `keras.Model` that trains a student against a teacher.
- `Method`, `StudentKind`, `Stage`: what method and student plugins implement.
- `hookimpl`: the decorator for plugin hooks (see `kdplug.hookspecs`).
- `get_plugin_manager()`: the loaded plugins and their registries.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from kdplug.distiller import Distiller  # noqa: E402
from kdplug.errors import ConfigError  # noqa: E402
from kdplug.errors import DataError  # noqa: E402
from kdplug.errors import KdplugError  # noqa: E402
from kdplug.errors import PluginError  # noqa: E402
from kdplug.hookspecs import hookimpl  # noqa: E402
from kdplug.method import Method  # noqa: E402
from kdplug.method import Stage  # noqa: E402
from kdplug.method import StudentKind  # noqa: E402
from kdplug.plugins import get_plugin_manager  # noqa: E402

__version__ = "0.1.0"
