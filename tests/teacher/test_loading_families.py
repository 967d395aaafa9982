"""`load_teacher` for every keras-hub text family (issue #16): a backbone
preset gets a new head, a keras-hub classifier preset and a Hugging Face
`*ForSequenceClassification` folder keep theirs, a `.keras` keras-hub
classifier loads with its own tokenizer, and `TextEncoder` packs text as
the family's own keras-hub preprocessor does."""

import types

import keras_hub
import numpy as np
import pytest
from conftest import fast_first

from kdplug.data.text_encoder import TextEncoder
from kdplug.models import BertClassifier
from kdplug.models import HubTextClassifier
from kdplug.teacher.loading import load_teacher
from kdplug.testing import families
from kdplug.testing import toy_sentences

TEXTS = toy_sentences(4, seed=3)[0]
PAIRS = toy_sentences(4, seed=4)[0]


def teacher_section(source, tokenizer=None):
    return types.SimpleNamespace(source=str(source), tokenizer=tokenizer, dropout=0.0)


def logits(model, tokenizer, texts=TEXTS):
    return np.asarray(model(TextEncoder(tokenizer, families.SEQUENCE_LENGTH)(texts)))


def preprocessed(task, texts):
    """`task`'s own preprocessor's features of `texts` (a batch of pairs
    as a `(texts, pairs)` tuple)."""
    if isinstance(texts, tuple):  # after a call that built the preprocessor:
        return task.preprocessor.call(x=texts)  # a tuple passed to it reads as (x, y)
    return task.preprocessor(texts)


def keras_hub_logits(task, texts=TEXTS):
    """The keras-hub classifier on its own preprocessor's encoding."""
    x = preprocessed(task, texts)
    return np.asarray(task({k: v for k, v in x.items() if k in task.backbone.input}))


@pytest.mark.parametrize("family", fast_first(families.FAMILIES))
def test_a_backbone_preset_gets_a_new_head_of_its_family(family, tmp_path):
    folder = families.write_tiny_preset(family, tmp_path / family)
    model, tokenizer, source = load_teacher(teacher_section(folder), 3)
    assert source == str(folder) and model.head_trained is False
    if family == "bert":
        assert isinstance(model, BertClassifier)
    else:
        assert isinstance(model, HubTextClassifier) and model.family.name == family
    assert logits(model, tokenizer).shape == (len(TEXTS), 3)


@pytest.mark.parametrize("family", fast_first(families.CLASSIFIER_FAMILIES))
def test_a_keras_hub_classifier_preset_keeps_its_head(family, tmp_path):
    folder = families.write_tiny_preset(family, tmp_path / family, classifier=True)
    model, tokenizer, _ = load_teacher(teacher_section(folder), 2)
    assert model.head_trained is True
    task = keras_hub.models.TextClassifier.from_preset(folder)
    # kdplug encodes text as the family's preprocessor does, pairs included
    encoder = TextEncoder(tokenizer, families.SEQUENCE_LENGTH)
    for texts, pairs in ((TEXTS, None), (TEXTS, PAIRS)):
        ours = encoder(texts, pairs)
        theirs = preprocessed(task, texts if pairs is None else (texts, pairs))
        for key in theirs:
            np.testing.assert_array_equal(ours[key], theirs[key])
    np.testing.assert_allclose(logits(model, tokenizer), keras_hub_logits(task),
                               atol=1e-5)


@pytest.mark.slow  # up to 21 s for one family in CI
@pytest.mark.parametrize("family", families.HF_FAMILIES)
def test_a_hugging_face_folder_keeps_its_classifier_head(family, tmp_path):
    folder = families.write_tiny_hf_folder(family, tmp_path / "head", classifier=True)
    model, tokenizer, _ = load_teacher(teacher_section(folder), 2)
    assert model.head_trained is True
    np.testing.assert_array_equal(model.classifier.get_weights()[1],
                                  families.HEAD_BIAS)
    bare = families.write_tiny_hf_folder(family, tmp_path / "bare")
    model, tokenizer, _ = load_teacher(teacher_section(bare), 2)
    assert model.head_trained is False
    np.testing.assert_array_equal(model.classifier.get_weights()[1], [0.0, 0.0])
    assert logits(model, tokenizer).shape == (len(TEXTS), 2)


# slow: saving and reloading a whole keras-hub task took 22 s in one CI run
# (1.3 s alone), over the fast tier's limit
@pytest.mark.slow
@pytest.mark.parametrize("family", families.CLASSIFIER_FAMILIES)
def test_a_keras_file_of_a_keras_hub_classifier_brings_its_tokenizer(family, tmp_path):
    folder = families.write_tiny_preset(family, tmp_path / family, classifier=True)
    task = keras_hub.models.TextClassifier.from_preset(folder)
    task.save(tmp_path / "user.keras")
    model, tokenizer, _ = load_teacher(teacher_section(tmp_path / "user.keras"), 2)
    assert model.head_trained is True
    assert isinstance(model, BertClassifier if family == "bert" else HubTextClassifier)
    assert type(tokenizer).__name__ == families.CLASS_PREFIXES[family] + "Tokenizer"
    np.testing.assert_allclose(logits(model, tokenizer), keras_hub_logits(task),
                               atol=1e-5)
