"""The plugin system: hooks, the manager that loads plugins, the registries,
and the contracts plugins implement (`Method`, `Stage`, `StudentKind`,
`Configurable`).

Nothing here imports TensorFlow: declaring and discovering plugins is cheap.
"""

from kdplug.plugin.configurable import Configurable
from kdplug.plugin.hookspecs import hookimpl
from kdplug.plugin.hookspecs import hookspec
from kdplug.plugin.manager import ENTRY_POINT_GROUP
from kdplug.plugin.manager import PluginManager
from kdplug.plugin.manager import PluginRecord
from kdplug.plugin.manager import get_plugin_manager
from kdplug.plugin.method import Method
from kdplug.plugin.method import Stage
from kdplug.plugin.registry import Registry
from kdplug.plugin.student_kind import PretrainedWeights
from kdplug.plugin.student_kind import StudentKind

__all__ = [
    "Configurable", "ENTRY_POINT_GROUP", "Method", "PluginManager", "PluginRecord",
    "PretrainedWeights", "Registry", "Stage", "StudentKind", "get_plugin_manager",
    "hookimpl", "hookspec",
]
