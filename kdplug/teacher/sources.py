"""What a teacher source holds: a model folder checked (a keras-hub preset
or a Hugging Face folder of a family keras-hub converts), whether it brings
a classifier head, a line describing it; without TensorFlow (so that
`kdplug validate` can check it). `teacher.source` itself is resolved to a
folder, file or preset name by `kdplug.config.sources.resolve_source`."""

import os

from kdplug.config.sources import PACKAGE_PREFIX  # noqa: F401  (re-exported: its 0.2 home)
from kdplug.config.sources import resolve_source  # noqa: F401  (re-exported: its 0.2 home)
from kdplug.errors import DataError
from kdplug.teacher.hf_heads import HF_MODEL_TYPES
from kdplug.teacher.hf_heads import load_json_object

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
    (`TeacherSource.has_head`)."""
    from kdplug.teacher.teacher_source import TeacherSource

    return TeacherSource.at(path).has_head


def describe_source(path):
    """A short description of a resolved source, for `kdplug validate`
    (`TeacherSource.describe`)."""
    from kdplug.teacher.teacher_source import TeacherSource

    return TeacherSource.at(path).describe()
