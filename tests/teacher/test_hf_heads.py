"""Hugging Face text-classification heads read from safetensors and put into
keras-hub TextClassifiers (kdplug.teacher.hf_heads)."""

import json
import os

import keras_hub
import numpy as np
import pytest
from safetensors.numpy import load_file
from safetensors.numpy import save_file

from kdplug.errors import DataError
from kdplug.teacher.hf_heads import apply_hf_head
from kdplug.teacher.hf_heads import read_hf_classifier_head
from kdplug.testing import families

# The Hugging Face tensors of each family's head, by keras-hub layer.
HEADS = {
    "bert": {"output_dense": "classifier"},
    "albert": {"output_dense": "classifier"},
    "distil_bert": {"pooled_dense": "pre_classifier", "output_dense": "classifier"},
    "roberta": {"pooled_dense": "classifier.dense", "output_dense": "classifier.out_proj"},
    "xlm_roberta": {"pooled_dense": "classifier.dense",
                    "output_dense": "classifier.out_proj"},
}


@pytest.fixture(scope="module")
def hf_folders(tmp_path_factory):
    """`hf_folders(family, **kwargs)`: a tiny Hugging Face folder, written
    once per family and arguments for the whole module."""
    written = {}

    def folder(family, **kwargs):
        key = (family, tuple(sorted((k, str(v)) for k, v in kwargs.items())))
        if key not in written:
            path = tmp_path_factory.mktemp(f"hf_{family}")
            written[key] = families.write_tiny_hf_folder(family, path, **kwargs)
        return written[key]

    return folder


def classifier_folder(hf_folders, family):
    return hf_folders(family, classifier=True, label_names=["negative", "positive"])


@pytest.mark.parametrize("family", families.HF_FAMILIES)
def test_head_is_read_in_keras_layout_and_lands_in_the_text_classifier(
        family, hf_folders):
    folder = classifier_folder(hf_folders, family)
    head = read_hf_classifier_head(folder)
    assert head.family == family and head.folder == folder
    assert head.label_names == ("negative", "positive")
    assert head.num_classes == 2
    assert head.tensors == HEADS[family]
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    for layer, name in HEADS[family].items():
        kernel, bias = head.layers[layer]
        np.testing.assert_array_equal(kernel, tensors[name + ".weight"].T)
        np.testing.assert_array_equal(bias, tensors[name + ".bias"])

    task = keras_hub.models.TextClassifier.from_preset(folder, num_classes=2)
    assert type(task).__name__ == families.CLASS_PREFIXES[family] + "TextClassifier"
    # keras-hub 0.32 converts the backbone but leaves the head freshly
    # initialised (its converters port heads of image classifiers only).
    assert not np.array_equal(task.output_dense.bias.numpy(), [5, -5])
    assert apply_hf_head(task, head) is task
    np.testing.assert_array_equal(task.output_dense.bias.numpy(), [5, -5])
    for layer, name in HEADS[family].items():
        np.testing.assert_array_equal(getattr(task, layer).kernel.numpy(),
                                      tensors[name + ".weight"].T)
        np.testing.assert_array_equal(getattr(task, layer).bias.numpy(),
                                      tensors[name + ".bias"])


@pytest.mark.parametrize("family", families.HF_FAMILIES)
def test_a_folder_without_a_head_gives_none(family, hf_folders):
    assert read_hf_classifier_head(hf_folders(family)) is None


def test_default_label_names_give_none(hf_folders):
    head = read_hf_classifier_head(hf_folders("bert", classifier=True, num_classes=3))
    assert head.label_names is None  # LABEL_0, LABEL_1, LABEL_2
    assert head.num_classes == 3
    np.testing.assert_array_equal(head.layers["output_dense"][1], [5, -5, 5])


def test_a_head_of_another_width_is_refused_naming_folder_and_tensor(hf_folders):
    folder = classifier_folder(hf_folders, "bert")
    head = read_hf_classifier_head(folder)
    task = keras_hub.models.TextClassifier.from_preset(folder, num_classes=3)
    before = task.output_dense.kernel.numpy()
    with pytest.raises(DataError) as error:
        apply_hf_head(task, head)
    message = str(error.value)
    assert folder in message and "classifier.weight is [2, 16]" in message
    assert "num_classes=2" in message
    np.testing.assert_array_equal(task.output_dense.kernel.numpy(), before)


def test_a_head_of_another_family_is_refused(hf_folders, tmp_path):
    head = read_hf_classifier_head(classifier_folder(hf_folders, "bert"))
    tokenizer = families.tiny_tokenizer("roberta", tmp_path)
    backbone = families.tiny_backbone("roberta", tokenizer.vocabulary_size())
    task = keras_hub.models.RobertaTextClassifier(backbone, num_classes=2)
    with pytest.raises(DataError, match="goes into a keras-hub BertTextClassifier, "
                                        "got RobertaTextClassifier"):
        apply_hf_head(task, head)


def copy_folder(source, target, drop=(), config=None):
    """`source` copied to `target` without the tensors in `drop`, its
    config.json updated with `config`."""
    os.makedirs(target)
    tensors = load_file(os.path.join(source, "model.safetensors"))
    save_file({k: v for k, v in tensors.items() if k not in drop},
              os.path.join(target, "model.safetensors"))
    with open(os.path.join(source, "config.json")) as f:
        data = json.load(f)
    with open(os.path.join(target, "config.json"), "w") as f:
        json.dump({**data, **(config or {})}, f)
    return str(target)


def test_an_incomplete_head_is_refused(hf_folders, tmp_path):
    folder = copy_folder(classifier_folder(hf_folders, "roberta"), tmp_path / "x",
                         drop=["classifier.out_proj.bias"])
    with pytest.raises(DataError, match="incomplete.*classifier.out_proj.bias missing"):
        read_hf_classifier_head(folder)


def test_id2label_must_match_the_head(hf_folders, tmp_path):
    folder = copy_folder(classifier_folder(hf_folders, "albert"), tmp_path / "x",
                         config={"id2label": {"0": "a", "1": "b", "2": "c"}})
    with pytest.raises(DataError, match="config.json: id2label names the classes "
                                        r"\[0, 1, 2\], but classifier.weight has 2"):
        read_hf_classifier_head(folder)


def test_unsupported_folders_are_refused(hf_folders, tmp_path):
    folder = copy_folder(classifier_folder(hf_folders, "bert"), tmp_path / "x",
                         config={"model_type": "deberta-v2"})
    with pytest.raises(DataError, match="model_type is 'deberta-v2'; kdplug reads"):
        read_hf_classifier_head(folder)
    os.remove(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "bert"}, f)
    with pytest.raises(DataError, match="no model.safetensors"):
        read_hf_classifier_head(folder)
    with pytest.raises(DataError, match="no config.json"):
        read_hf_classifier_head(tmp_path)
