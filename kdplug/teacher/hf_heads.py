"""Text-classification heads of Hugging Face folders, put into keras-hub.

keras-hub 0.32 converts the backbone of a Hugging Face folder
(`keras_hub.models.Backbone.from_preset(folder)`, and
`keras_hub.models.TextClassifier.from_preset(folder, num_classes=C)` builds a
`<Family>TextClassifier` around it), but it does not port the folder's text
classification head: the converters' `convert_head` runs for image
classifiers only, so a fine-tuned `BertForSequenceClassification` comes back
with a freshly initialised head. `read_hf_classifier_head` reads that head
from the folder's safetensors and `apply_hf_head` puts it into the
TextClassifier's head layers:

- bert, albert: `classifier` -> `output_dense`;
- distil_bert: `pre_classifier` -> `pooled_dense`, `classifier` -> `output_dense`;
- roberta, xlm_roberta: `classifier.dense` -> `pooled_dense`,
  `classifier.out_proj` -> `output_dense`.

Only the families keras-hub 0.32 converts from Hugging Face format are
listed (no DeBERTa-v3 or ELECTRA converter). Neither function needs
TensorFlow; `apply_hf_head` assigns to the task's variables.

Examples:

```python
import keras_hub
from kdplug.teacher.hf_heads import apply_hf_head, read_hf_classifier_head

head = read_hf_classifier_head("models/my-bert-sst2")   # None if it has none
task = keras_hub.models.TextClassifier.from_preset(
    "models/my-bert-sst2", num_classes=head.num_classes)
apply_hf_head(task, head)
head.label_names                                        # ("negative", "positive")
```
"""

import dataclasses
import json
import os
import re

import numpy as np

from kdplug.errors import DataError

# keras-hub's class prefix of each family that keras-hub 0.32 converts from
# Hugging Face format (`<prefix>Backbone`, `<prefix>TextClassifier`).
KERAS_HUB_PREFIXES = {
    "bert": "Bert",
    "distil_bert": "DistilBert",
    "roberta": "Roberta",
    "xlm_roberta": "XLMRoberta",
    "albert": "Albert",
}

# Hugging Face's `model_type` is the class prefix in lower case, xlm-roberta
# aside. Derived rather than spelled out: DistilBERT's model_type is also the
# name of the DistilBERT distillation method, and tests/test_architecture.py
# keeps method names out of kdplug/ code (a model family is not the method).
HF_MODEL_TYPES = {family: "xlm-roberta" if family == "xlm_roberta" else prefix.lower()
                  for family, prefix in KERAS_HUB_PREFIXES.items()}

# The head of each family's `...ForSequenceClassification`: the keras-hub
# TextClassifier layer each Hugging Face Linear goes into (`<name>.weight`
# [out, in], `<name>.bias` [out]), in the order the model applies them.
HEAD_TENSORS = {
    "bert": (("output_dense", "classifier"),),
    "distil_bert": (("pooled_dense", "pre_classifier"), ("output_dense", "classifier")),
    "roberta": (("pooled_dense", "classifier.dense"),
                ("output_dense", "classifier.out_proj")),
    "xlm_roberta": (("pooled_dense", "classifier.dense"),
                    ("output_dense", "classifier.out_proj")),
    "albert": (("output_dense", "classifier"),),
}

SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
_DEFAULT_LABEL = re.compile(r"LABEL_(\d+)")


@dataclasses.dataclass(frozen=True)
class HfClassifierHead:
    """A Hugging Face text-classification head, in Keras Dense layout.

    Args:
        folder: the Hugging Face folder it was read from.
        family: the kdplug family (`bert`, `distil_bert`, `roberta`,
            `xlm_roberta`, `albert`).
        layers: `{keras-hub layer name: (kernel [in, out], bias [out])}`,
            e.g. `{"output_dense": (kernel, bias)}`; the weights are
            transposed from Hugging Face's `[out, in]`.
        tensors: `{keras-hub layer name: Hugging Face tensor name}` (without
            `.weight` / `.bias`), e.g. `{"output_dense": "classifier"}`.
        label_names: the class names of `id2label` in id order, or `None`
            when the folder has none or only Hugging Face's default
            `LABEL_0, LABEL_1, ...`.
    """

    folder: str
    family: str
    layers: dict
    tensors: dict
    label_names: tuple = None

    @property
    def num_classes(self):
        """The width of the head's output (`output_dense`)."""
        return int(self.layers["output_dense"][1].shape[0])


def load_json_object(path):
    """A JSON file that must hold an object; `DataError` naming it otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: not readable JSON ({e})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object")
    return data


class _Tensors:
    """The tensor names of a folder's safetensors (one file, or shards
    listed by `model.safetensors.index.json`), read on demand."""

    def __init__(self, folder):
        import safetensors

        self._safe_open = safetensors.safe_open
        index = os.path.join(folder, SAFETENSORS_INDEX)
        single = os.path.join(folder, SAFETENSORS_FILE)
        if os.path.isfile(index):
            weight_map = load_json_object(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise DataError(f"{index}: no weight_map")
            self.files = {name: os.path.join(folder, file)
                          for name, file in weight_map.items()}
        elif os.path.isfile(single):
            with safetensors.safe_open(single, framework="np") as f:
                self.files = {name: single for name in f.keys()}
        else:
            raise DataError(
                f"{folder}: no {SAFETENSORS_FILE} (kdplug reads the head of a "
                "Hugging Face folder from its safetensors weights)")

    def __contains__(self, name):
        return name in self.files

    def get(self, name):
        path = self.files[name]
        try:
            with self._safe_open(path, framework="np") as f:
                return f.get_tensor(name)
        except Exception as e:  # a missing shard or a damaged file
            raise DataError(f"{path}: cannot read tensor {name} ({e})") from None


def _family_of(config, config_path):
    model_type = config.get("model_type")
    for family, hf_type in HF_MODEL_TYPES.items():
        if hf_type == model_type:
            return family
    known = ", ".join(sorted(HF_MODEL_TYPES.values()))
    raise DataError(
        f"{config_path}: model_type is {model_type!r}; kdplug reads the "
        f"classification heads of model_type {known} (the families keras-hub "
        "converts from Hugging Face format)")


def _label_names(config, config_path, num_classes, where):
    id2label = config.get("id2label")
    if not id2label:
        return None
    try:
        by_id = {int(k): str(v) for k, v in id2label.items()}
    except (AttributeError, TypeError, ValueError):
        raise DataError(f"{config_path}: id2label must map class ids to names, "
                        f"got {id2label!r}") from None
    if sorted(by_id) != list(range(num_classes)):
        raise DataError(
            f"{config_path}: id2label names the classes {sorted(by_id)}, but "
            f"{where} has {num_classes} outputs")
    names = tuple(by_id[i] for i in range(num_classes))
    if all((m := _DEFAULT_LABEL.fullmatch(n)) and int(m.group(1)) == i
           for i, n in enumerate(names)):
        return None
    return names


def read_hf_classifier_head(folder):
    """Reads the text-classification head of a Hugging Face folder.

    Args:
        folder: a Hugging Face model folder (`config.json` and
            `model.safetensors`, or shards with `model.safetensors.index.json`)
            of a family keras-hub converts: `model_type` bert, the DistilBERT
            one, roberta, xlm-roberta or albert.

    Returns:
        `None` when the folder holds no classification head (a bare
        `BertModel`, ...), else an `HfClassifierHead` with the head's weights
        as Keras Dense `(kernel [in, out], bias)` per keras-hub layer and the
        class names of `id2label` (`None` for the default `LABEL_<i>`).

    Raises:
        DataError: no `config.json` or safetensors, an unsupported
            `model_type`, a head with a tensor missing, or tensors whose
            shapes do not chain (`pre_classifier` [H, H] then `classifier`
            [C, H]) or disagree with `id2label`.

    Examples:

    ```python
    head = read_hf_classifier_head("models/my-roberta-sst2")
    kernel, bias = head.layers["output_dense"]    # [16, 2], [2]
    head.tensors["output_dense"]                  # "classifier.out_proj"
    ```
    """
    folder = str(folder)
    config_path = os.path.join(folder, "config.json")
    if not os.path.isfile(config_path):
        raise DataError(f"{folder}: no config.json (not a Hugging Face model folder)")
    config = load_json_object(config_path)
    family = _family_of(config, config_path)
    tensors = _Tensors(folder)
    names = [f"{base}.{part}" for _, base in HEAD_TENSORS[family]
             for part in ("weight", "bias")]
    present = [n for n in names if n in tensors]
    if not present:
        return None
    missing = [n for n in names if n not in tensors]
    if missing:
        raise DataError(
            f"{folder}: the {family} classification head is incomplete: "
            f"{', '.join(present)} present, {', '.join(missing)} missing")
    layers, sources = {}, {}
    width = None  # the input width the next Linear must take
    for layer, base in HEAD_TENSORS[family]:
        weight, bias = tensors.get(f"{base}.weight"), tensors.get(f"{base}.bias")
        if weight.ndim != 2 or bias.shape != (weight.shape[0],):
            raise DataError(
                f"{folder}: {base}.weight {list(weight.shape)} and {base}.bias "
                f"{list(bias.shape)} are not a Linear layer's [out, in] and [out]")
        if width is not None and weight.shape[1] != width:
            raise DataError(
                f"{folder}: {base}.weight takes {weight.shape[1]} inputs "
                f"{list(weight.shape)}, but the layer before it gives {width}")
        width = weight.shape[0]
        layers[layer] = (np.ascontiguousarray(weight.T), np.asarray(bias))
        sources[layer] = base
    out = HEAD_TENSORS[family][-1][1]
    label_names = _label_names(config, config_path, width, f"{out}.weight")
    return HfClassifierHead(folder=folder, family=family, layers=layers,
                            tensors=sources, label_names=label_names)


def apply_hf_head(task, head):
    """Puts a Hugging Face head into a keras-hub `<Family>TextClassifier`.

    All shapes are checked before anything is assigned, so a mismatch leaves
    the task as it was.

    Args:
        task: a keras-hub TextClassifier of the head's family (built, e.g. by
            `keras_hub.models.TextClassifier.from_preset(folder,
            num_classes=head.num_classes)`).
        head: an `HfClassifierHead` from `read_hf_classifier_head`.

    Returns:
        `task`, its head layers holding the Hugging Face weights.

    Raises:
        DataError: the task is not of the head's family, lacks a head layer,
            or a layer's shape differs from the Hugging Face tensor (e.g.
            `num_classes` is not the head's width); the message names the
            folder and the tensor.

    Examples:

    ```python
    task = keras_hub.models.TextClassifier.from_preset(folder, num_classes=2)
    apply_hf_head(task, read_hf_classifier_head(folder))
    ```
    """
    task_name = type(task).__name__
    backbone = getattr(task, "backbone", None)
    expected = KERAS_HUB_PREFIXES[head.family] + "Backbone"
    if backbone is None or expected not in [c.__name__ for c in type(backbone).__mro__]:
        raise DataError(
            f"{head.folder}: a {head.family} classification head goes into a "
            f"keras-hub {KERAS_HUB_PREFIXES[head.family]}TextClassifier, got "
            f"{task_name} (backbone {type(backbone).__name__})")
    targets = []
    for layer_name, (kernel, bias) in head.layers.items():
        tensor = head.tensors[layer_name]
        layer = getattr(task, layer_name, None)
        if layer is None or not hasattr(layer, "kernel"):
            raise DataError(
                f"{head.folder}: {tensor}.weight goes into the {layer_name} "
                f"Dense layer, which {task_name} has not")
        for variable, value, part in ((layer.kernel, kernel, "weight"),
                                      (layer.bias, bias, "bias")):
            if tuple(variable.shape) != value.shape:
                hf_shape = list(value.shape[::-1] if part == "weight" else value.shape)
                raise DataError(
                    f"{head.folder}: {tensor}.{part} is {hf_shape} "
                    f"(Keras {list(value.shape)}), but {task_name}.{layer_name}."
                    f"{'kernel' if part == 'weight' else 'bias'} is "
                    f"{list(variable.shape)}" + (
                        f"; build the classifier with num_classes="
                        f"{head.num_classes}" if layer_name == "output_dense" else ""))
            targets.append((variable, value))
    for variable, value in targets:
        variable.assign(value.astype(variable.dtype))
    return task
