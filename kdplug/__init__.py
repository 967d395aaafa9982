"""kdplug: plugin-based knowledge distillation for Keras 3.

Public API:

- `Distiller`: a `keras.Model` that trains a student against a teacher
  (any `keras.Model` as either); `distill(teacher=, student=, train_data=)`,
  the common case in one call; `make_optimizer`, the CLI's optimizer recipe
  (`kdplug.training.FusedAdamW`: Keras' AdamW on TensorFlow's fused kernel).
- `Method`, `StudentKind`, `Stage`: what method and student plugins implement.
- `hookimpl`: the decorator for plugin hooks (see `kdplug.plugin.hookspecs`).
- `get_plugin_manager()`: the loaded plugins and their registries.
- `Experiment`: runs a validated config end to end (what `kdplug run` does).
- `load_model(path)`: `keras.saving.load_model` with every plugin's Keras
  classes registered first.
- The errors every user-caused problem raises: `KdplugError` and its
  `ConfigError`, `DataError`, `PluginError`, `TrainingError`.

Importing `kdplug` does not import TensorFlow: the names that need it
(`Distiller`, `Experiment`, `load_model`) are loaded on first use, so
declaring a plugin or validating a config stays fast. That first use
imports TensorFlow without its C++ start-up lines, and TensorFlow logs
errors only (`TF_CPP_MIN_LOG_LEVEL=3`), unless you set
`TF_CPP_MIN_LOG_LEVEL` yourself (0 or 1 shows everything) or imported
TensorFlow first.
"""

import os
from typing import TYPE_CHECKING

from kdplug import _lazy  # the standard library only: nothing imports TensorFlow yet

# TensorFlow's C++ log output: errors only, as the CLI shows it, unless the
# user set a level (`kdplug -v` shows everything); its start-up lines are
# hidden while kdplug's lazy exports import it (`kdplug.run.console`).
_lazy.quiet_tensorflow_logs()
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from kdplug import _compat  # noqa: E402
from kdplug._lazy import lazy_exports  # noqa: E402
from kdplug.errors import ConfigError  # noqa: E402
from kdplug.errors import DataError  # noqa: E402
from kdplug.errors import KdplugError  # noqa: E402
from kdplug.errors import PluginError  # noqa: E402
from kdplug.errors import TrainingError  # noqa: E402
from kdplug.plugin.hookspecs import hookimpl  # noqa: E402
from kdplug.plugin.manager import get_plugin_manager  # noqa: E402
from kdplug.plugin.method import Method  # noqa: E402
from kdplug.plugin.method import Stage  # noqa: E402
from kdplug.plugin.student_kind import StudentKind  # noqa: E402

__version__ = "0.3.0.dev0"

_compat.install()

if TYPE_CHECKING:  # loaded on first use (they import TensorFlow): `lazy_exports`
    from kdplug.models.saving import load_model
    from kdplug.run.experiment import Experiment
    from kdplug.training.distill import distill
    from kdplug.training.distiller import Distiller
    from kdplug.training.optimizers import make_optimizer

__getattr__, __dir__, __all__ = lazy_exports(__name__)
