"""Loading teachers: local Hugging Face BERT folders, packages, presets, .keras."""

import os

import keras_hub

from kdplug.errors import ConfigError
from kdplug.models import BertClassifier
from kdplug.models.saving import load_model
from kdplug.teacher.sources import check_source_folder
from kdplug.teacher.sources import resolve_source


def load_teacher(teacher_cfg, num_classes, resolve_path=os.path.abspath,
                 per_token=False):
    """Returns `(BertClassifier, tokenizer, resolved_source)`.

    A fresh classification head is added to a backbone (on every word piece
    with `per_token`, for token classification); a `.keras` file is loaded
    whole (its tokenizer comes from `teacher.tokenizer`).
    """
    source = resolve_source(teacher_cfg.source, resolve_path)
    if source.endswith(".keras"):
        model = load_model(source)  # any kdplug or plugin class
        if not hasattr(model, "taps"):
            raise ConfigError(
                f"{source}: a .keras teacher must be a kdplug model with taps() "
                f"(e.g. BertClassifier), got {type(model).__name__}",
                field="teacher.source",
            )
        if not teacher_cfg.tokenizer:
            raise ConfigError(
                "a .keras teacher needs teacher.tokenizer (a folder or preset "
                "with the vocabulary)",
                field="teacher.tokenizer",
            )
        if bool(getattr(model, "per_token", False)) != per_token:
            raise ConfigError(
                f"{source}: the teacher's head is "
                f"{'per token' if not per_token else 'per sentence'}, and this "
                f"task needs one {'per token' if per_token else 'per sentence'} "
                "(data.task)", field="teacher.source")
        tokenizer = _tokenizer(resolve_source(teacher_cfg.tokenizer, resolve_path))
        return model, tokenizer, source
    if os.path.isdir(source):
        check_source_folder(source)
    try:
        backbone = keras_hub.models.BertBackbone.from_preset(source)
    except Exception as e:  # keras-hub raises several types for bad presets
        raise ConfigError(
            f"cannot load a BERT backbone from {source!r}: {e}",
            field="teacher.source",
        ) from None
    backbone.trainable = True
    model = BertClassifier(backbone, num_classes=num_classes, dropout=teacher_cfg.dropout,
                           per_token=per_token)
    tokenizer = _tokenizer(
        resolve_source(teacher_cfg.tokenizer, resolve_path)
        if teacher_cfg.tokenizer else source
    )
    return model, tokenizer, source


def check_teacher(teacher, tokenizer, config):
    """Checks a loaded teacher against the config before any training:
    the data's sequence length fits its position embeddings, and the
    tokenizer's vocabulary is the one its embedding was trained with.
    Raises `ConfigError` naming the field."""
    max_len = teacher.backbone.max_sequence_length
    if config.data.sequence_length > max_len:
        raise ConfigError(
            f"above the teacher's maximum sequence length {max_len}",
            config.file, "data.sequence_length", config.data.sequence_length,
        )
    if tokenizer.vocabulary_size() != teacher.backbone.vocabulary_size:
        raise ConfigError(
            f"tokenizer has {tokenizer.vocabulary_size()} tokens but the "
            f"teacher's embedding has {teacher.backbone.vocabulary_size}",
            config.file, "teacher.tokenizer", config.teacher.tokenizer,
        )


def _tokenizer(source):
    try:
        # special_tokens_in_strings: "[MASK]" written by augmenters must
        # become the mask token, not "[", "mask", "]".
        return keras_hub.tokenizers.BertTokenizer.from_preset(
            source, special_tokens_in_strings=True
        )
    except Exception as e:
        raise ConfigError(
            f"cannot load a BERT tokenizer from {source!r}: {e}",
            field="teacher.tokenizer",
        ) from None
