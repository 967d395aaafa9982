"""The student as a keras-hub preset folder: backbone, head, preprocessor
(tokenizer + sequence length) and class names, loadable without kdplug.

A kdplug `BertClassifier` has the structure of keras-hub's
`BertTextClassifier` (a `BertBackbone`, its pooler on [CLS], dropout, one
dense layer): the export builds that task around a copy of the student's
backbone, copies the classifier into `output_dense`, attaches a
`BertTextClassifierPreprocessor` built from the run's tokenizer at the run's
sequence length, and saves it with `save_to_preset`. Students of the other
families (`HubTextClassifier`) are saved the same way, with their family's
task and preprocessor classes: both models' `to_task(preprocessor)` builds
the keras-hub task. Other students (BiLSTM, bottleneck, per-token,
mean-pooled (`teacher.pooling: mean`: keras-hub's heads read [CLS]),
multi-task, ELECTRA, for which keras-hub has no classifier) are refused.

The folder then loads in a process that never imports kdplug:

```python
import keras_hub
model = keras_hub.models.TextClassifier.from_preset("runs/x/export/keras_hub_preset")
model.predict(["a fine film"])  # logits, from raw strings
```

Examples:

```python
from kdplug.evaluation.preset_export import save_preset

save_preset(student, "runs/x/export/keras_hub_preset", tokenizer,
            sequence_length=48, label_names=["negative", "positive"])
```
"""

import json
import os

import keras_hub

from kdplug import storage
from kdplug.errors import KdplugError
from kdplug.run_files import EXPORT_LABELS as LABELS_FILE


def check_presettable(model):
    """Raises `KdplugError` (naming the student's class) when the student is
    not a model `save_preset` can write: a kdplug `BertClassifier` or
    `HubTextClassifier` of a family keras-hub has a text classifier for
    (`to_task()`), classifying sentences from their [CLS] vector."""
    family = getattr(model, "family", None)
    pooling = getattr(model, "pooling", "cls")
    if (callable(getattr(model, "to_task", None)) and family is not None
            and family.classifier and not getattr(model, "per_token", False)
            and pooling == "cls"):
        return
    name = type(model).__name__
    if family is not None and not family.classifier:
        detail = f" of the {family.name} family, for which keras-hub has no text classifier"
    elif getattr(model, "per_token", False):
        detail = (" with per_token=True (token classification, extractive QA: "
                  "keras-hub has no task class for either; `kdplug predict` on the run "
                  "answers raw text)")
    elif pooling != "cls":
        detail = (f" with pooling={pooling!r} (teacher.pooling), whose head reads "
                  "other than the [CLS] vector keras-hub's classifiers read")
    else:
        detail = ""
    raise KdplugError(
        f"the keras_hub_preset export needs a keras-hub text classifier (a kdplug "
        f"BertClassifier or HubTextClassifier); the student is a {name}{detail}, "
        "which keras-hub cannot rebuild. Export it as 'saved_model' instead (it "
        "takes token ids, and raw strings through its 'serve_text' signature), "
        "or as 'keras'.")


def keras_hub_task(model, tokenizer, sequence_length):
    """The student as keras-hub's `<Family>TextClassifier` (its `to_task()`:
    the student's backbone and head weights), with a preprocessor built from
    `tokenizer` at `sequence_length`. The student is not modified."""
    check_presettable(model)
    task_cls = getattr(keras_hub.models, model.family.classifier)
    return model.to_task(preprocessor=_preprocessor(task_cls, tokenizer, sequence_length))


def _preprocessor(task_cls, tokenizer, sequence_length):
    """`task_cls.preprocessor_cls(tokenizer, sequence_length=N)`: built here,
    so the saved `preprocessor.json` records N (a preset folder's own
    `sentence_bert_config.json` would otherwise win on reload)."""
    preprocessor_cls = getattr(task_cls, "preprocessor_cls", None)
    if preprocessor_cls is None:
        raise KdplugError(f"{task_cls.__name__} names no preprocessor class; "
                          "it cannot be saved with a tokenizer")
    tokenizer_cls = getattr(preprocessor_cls, "tokenizer_cls", None)
    if tokenizer_cls is not None and not isinstance(tokenizer, tokenizer_cls):
        raise KdplugError(
            f"{preprocessor_cls.__name__} needs a {tokenizer_cls.__name__}; "
            f"the run's tokenizer is a {type(tokenizer).__name__}")
    if sequence_length is None:
        raise KdplugError("the keras_hub_preset export needs a sequence length "
                          "(StudentExporter(sequence_length=...))")
    return preprocessor_cls(tokenizer=tokenizer, sequence_length=int(sequence_length))


def save_preset(model, path, tokenizer, sequence_length, label_names=None):
    """Writes the student as a keras-hub preset folder at `path` (replacing
    one there) and returns `path`.

    The folder holds keras-hub's files only (`config.json`,
    `model.weights.h5` with the backbone, `task.json`, `task.weights.h5`
    with the head, `preprocessor.json`, `tokenizer.json`,
    `assets/tokenizer/vocabulary.txt`, `metadata.json`), plus `labels.json`
    (`{"names": [...], "ids": {name: id}}`) when `label_names` are given.
    It is written to a temporary folder beside `path` and moved into place.

    Args:
        model: the student (see `check_presettable`).
        path: the folder to write.
        tokenizer: the run's keras-hub tokenizer (e.g. a `BertTokenizer`).
        sequence_length: int. What the preprocessor pads and truncates to.
        label_names: class names in output order, or None.
    """
    if tokenizer is None:
        raise KdplugError("the keras_hub_preset export needs the run's tokenizer "
                          "(StudentExporter(tokenizer=...))")
    task = keras_hub_task(model, tokenizer, sequence_length)
    if label_names is not None:
        label_names = [str(n) for n in label_names]
        width = getattr(getattr(task, "output_dense", None), "units", None)
        if width is not None and width != len(label_names):
            raise KdplugError(f"{len(label_names)} label names for a model with "
                              f"{width} outputs")
    with storage.atomic_folder(path) as tmp:
        task.save_to_preset(tmp)
        if label_names is not None:
            with open(os.path.join(tmp, LABELS_FILE), "w", encoding="utf-8") as f:
                json.dump({"names": label_names,
                           "ids": {n: i for i, n in enumerate(label_names)}}, f, indent=2)
    return path


def load_preset(path):
    """The saved task (`keras_hub.models.TextClassifier.from_preset`), with
    its preprocessor: `load_preset(p).predict(["a fine film"])`."""
    return keras_hub.models.TextClassifier.from_preset(path)
