"""kdplug.testing.families: a tiny model of every keras-hub text family,
built offline, loads back with keras-hub's own loaders (presets and Hugging
Face folders)."""

import json
import os

import keras_hub
import numpy as np
import pytest
from conftest import fast_first
from safetensors.numpy import load_file

from kdplug.testing import families
from kdplug.testing import toy_sentences

SENTENCES = toy_sentences(4)[0]


def as_list(ids):
    return np.asarray(ids).tolist()


def round_trips(tokenizer):
    """Each toy sentence tokenizes to ids within the vocabulary and back."""
    for sentence in SENTENCES:
        ids = as_list(tokenizer(sentence))
        assert ids and all(0 <= i < tokenizer.vocabulary_size() for i in ids)
        text = tokenizer.detokenize(np.asarray(ids))
        text = text.numpy().decode() if hasattr(text, "numpy") else str(text)
        assert text.strip() == sentence
    return [as_list(tokenizer(s)) for s in SENTENCES]


def position_embeddings(backbone):
    layer = getattr(backbone, "position_embedding", None) or \
        backbone.embeddings.position_embedding
    return layer.position_embeddings.numpy()


@pytest.mark.parametrize("family", families.FAMILIES)
def test_tiny_tokenizer_round_trips_the_toy_sentences(family, tmp_path):
    tokenizer = families.tiny_tokenizer(family, tmp_path)
    assert type(tokenizer).__name__ == families.CLASS_PREFIXES[family] + "Tokenizer"
    assert 20 <= tokenizer.vocabulary_size() <= 100
    round_trips(tokenizer)
    # Every special token the family's preprocessors use has an id.
    for token in ("start_token", "end_token", "pad_token"):
        if hasattr(tokenizer, token + "_id"):
            assert getattr(tokenizer, token + "_id") is not None


@pytest.mark.parametrize("family", fast_first(families.FAMILIES))
def test_tiny_preset_loads_back_with_keras_hub(family, tmp_path):
    folder = families.write_tiny_preset(family, tmp_path / family, seed=3)
    assert folder == str(tmp_path / family)
    backbone = keras_hub.models.Backbone.from_preset(folder)
    tokenizer = keras_hub.models.Tokenizer.from_preset(folder)
    prefix = families.CLASS_PREFIXES[family]
    assert type(backbone).__name__ == prefix + "Backbone"
    assert type(tokenizer).__name__ == prefix + "Tokenizer"
    assert backbone.hidden_dim == 16 and backbone.num_layers == 2
    assert backbone.token_embedding.input_dim == tokenizer.vocabulary_size()
    ids = round_trips(tokenizer)
    assert ids == [as_list(families.tiny_tokenizer(family, tmp_path / "again")(s))
                   for s in SENTENCES]
    # The same seed builds the same weights, and the preset keeps them.
    again = families.tiny_backbone(family, tokenizer.vocabulary_size(), seed=3)
    for saved, built in zip(backbone.weights, again.weights, strict=True):
        np.testing.assert_array_equal(saved.numpy(), built.numpy(), err_msg=saved.path)


@pytest.mark.parametrize("family", fast_first(families.CLASSIFIER_FAMILIES))
def test_tiny_classifier_preset_loads_with_its_head(family, tmp_path):
    folder = families.write_tiny_preset(family, tmp_path / family, classifier=True,
                                        num_classes=3)
    task = keras_hub.models.TextClassifier.from_preset(folder)
    prefix = families.CLASS_PREFIXES[family]
    assert type(task).__name__ == prefix + "TextClassifier"
    assert type(task.preprocessor).__name__ == prefix + "TextClassifierPreprocessor"
    assert task.preprocessor.sequence_length == families.SEQUENCE_LENGTH
    heads = families.head_layers(task)
    assert list(heads) == (["output_dense"] if family in ("bert", "albert")
                           else ["pooled_dense", "output_dense"])
    for name, layer in heads.items():
        kernel = layer.kernel.numpy()
        np.testing.assert_allclose(
            kernel.ravel(), np.linspace(-0.5, 0.5, kernel.size), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(heads["output_dense"].bias.numpy(), [5, -5, 5])
    x = task.preprocessor([SENTENCES[0]])
    ids = (x[0] if isinstance(x, tuple) else x)["token_ids"]
    assert ids.shape == (1, families.SEQUENCE_LENGTH)
    assert type(task.backbone).__name__ == prefix + "Backbone"
    round_trips(task.preprocessor.tokenizer)


def test_electra_has_no_classifier_preset(tmp_path):
    with pytest.raises(ValueError, match="not electra"):
        families.write_tiny_preset("electra", tmp_path, classifier=True)
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("family", families.HF_FAMILIES)
def test_tiny_hf_folder_loads_with_keras_hub(family, tmp_path):
    folder = families.write_tiny_hf_folder(family, tmp_path / family)
    config = json.loads((tmp_path / family / "config.json").read_text())
    assert config["architectures"] == [families.CLASS_PREFIXES[family] + "Model"]
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    backbone = keras_hub.models.Backbone.from_preset(folder)
    assert type(backbone).__name__ == families.CLASS_PREFIXES[family] + "Backbone"

    def tensor(suffix):  # the base model's prefix, where Hugging Face has one
        (name,) = [n for n in tensors if n.endswith("embeddings." + suffix)]
        return tensors[name]

    np.testing.assert_array_equal(backbone.token_embedding.embeddings.numpy(),
                                  tensor("word_embeddings.weight"))
    positions = tensor("position_embeddings.weight")
    if family == "roberta":  # two reserved rows (padding_idx 1)
        positions = positions[2:]
    if family == "xlm_roberta":  # keras-hub folds token type 0 into positions
        positions = positions[2:] + tensor("token_type_embeddings.weight")[0]
    np.testing.assert_allclose(position_embeddings(backbone), positions, rtol=1e-6)
    tokenizer = keras_hub.models.Tokenizer.from_preset(folder)
    assert tokenizer.vocabulary_size() == config["vocab_size"]
    assert round_trips(tokenizer) == [
        as_list(families.tiny_tokenizer(family, tmp_path / "again")(s)) for s in SENTENCES]


@pytest.mark.parametrize("family", families.HF_FAMILIES)
def test_tiny_hf_classifier_folder(family, tmp_path):
    folder = families.write_tiny_hf_folder(family, tmp_path, classifier=True,
                                           label_names=["neg", "pos"])
    config = json.loads((tmp_path / "config.json").read_text())
    prefix = families.CLASS_PREFIXES[family]
    assert config["architectures"] == [prefix + "ForSequenceClassification"]
    assert config["id2label"] == {"0": "neg", "1": "pos"}
    assert config["label2id"] == {"neg": 0, "pos": 1}
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    out = "classifier.out_proj" if family in ("roberta", "xlm_roberta") else "classifier"
    np.testing.assert_array_equal(tensors[out + ".bias"], [5, -5])
    assert tensors[out + ".weight"].shape == (2, 16)
    if family == "distil_bert":
        assert tensors["pre_classifier.weight"].shape == (16, 16)
    # The base model's tensors sit under Hugging Face's prefix.
    base = "roberta" if family == "xlm_roberta" else families.HF_MODEL_TYPES[family]
    assert f"{base}.embeddings.word_embeddings.weight" in tensors


@pytest.mark.parametrize("family", ["deberta_v3", "electra", "gpt2"])
def test_no_hf_folder_without_a_keras_hub_converter(family, tmp_path):
    with pytest.raises(ValueError, match="keras-hub converts from Hugging Face"):
        families.write_tiny_hf_folder(family, tmp_path)
