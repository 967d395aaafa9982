"""`HubTextClassifier`: every keras-hub text family kdplug taps gives the
logits of keras-hub's own text classifier, its layers' outputs as taps, and
round-trips through keras-hub tasks and `.keras` files; `truncated_hub`
students copy the chosen layers."""

import keras
import keras_hub
import numpy as np
import pytest
from conftest import fast_first

from kdplug import KdplugError
from kdplug import load_model
from kdplug import testing
from kdplug.models import HubTextClassifier
from kdplug.models.hub_family import FAMILIES
from kdplug.models.hub_family import family_of
from kdplug.plugin.student_kind import PretrainedWeights
from kdplug.students import truncated_hub
from kdplug.testing import families

OTHER_FAMILIES = [name for name in FAMILIES if name != "bert"]


def tiny_backbone(family, seed=0):
    """A random 3-layer backbone of `family` (ALBERT's and ELECTRA's
    embeddings narrower than their layers, so the projection is used)."""
    return families.tiny_backbone(family, testing.VOCAB_SIZE, num_layers=3, seed=seed)


def batch(n=4):
    x, _ = testing.toy_batch(n)
    return x


def own_inputs(model, x):
    return {k: v for k, v in x.items() if k in model.input}


@pytest.mark.parametrize("family", fast_first(OTHER_FAMILIES))
def test_taps_and_logits_are_the_keras_hub_models_own(family):
    backbone = tiny_backbone(family)
    model = HubTextClassifier(backbone, num_classes=3, dropout=0.0)
    assert family_of(backbone).name == family == model.family.name
    x = batch()
    taps = model.taps(x, model.available_taps())
    logits = np.asarray(model(x))
    np.testing.assert_allclose(taps["logits"], logits, atol=1e-6)
    # the top layer's output is the backbone's sequence output
    sequence = backbone(own_inputs(backbone, x))
    sequence = sequence["sequence_output"] if isinstance(sequence, dict) else sequence
    np.testing.assert_allclose(taps["hidden/3"], sequence, atol=1e-5)
    np.testing.assert_allclose(taps["cls/2"], np.asarray(taps["hidden/2"])[:, 0], atol=0)
    assert taps["embeddings"].shape == (4, testing.SEQUENCE_LENGTH, 16)  # projected to the layers' width
    if model.family.offers_attention:
        # probabilities = softmax(scores) over the unpadded keys
        np.testing.assert_allclose(
            keras.ops.softmax(taps["attention_scores/2"], axis=-1),
            taps["attention/2"], atol=1e-5)
    else:
        assert not any(name.startswith("attention") for name in model.available_taps())
    if model.family.classifier:  # keras-hub's classifier, same weights, same logits
        task = model.to_task()
        assert type(task).__name__ == model.family.classifier
        np.testing.assert_allclose(task(own_inputs(task.backbone, x)), logits, atol=1e-5)
        back = HubTextClassifier.from_task(task)
        np.testing.assert_allclose(back(x), logits, atol=1e-5)


@pytest.mark.parametrize("family", ["roberta", "albert", "deberta_v3"])
def test_keras_file_round_trip(family, tmp_path):
    model = HubTextClassifier(tiny_backbone(family), num_classes=2)
    x = batch()
    model.save(tmp_path / "m.keras")
    again = load_model(tmp_path / "m.keras")
    assert isinstance(again, HubTextClassifier) and again.family.name == family
    np.testing.assert_allclose(again(x), model(x), atol=1e-6)
    # each weight once: the optimizer sees no duplicates
    assert len({id(w) for w in model.trainable_weights}) == len(model.trainable_weights)


def test_a_tap_the_family_cannot_give_names_it():
    model = HubTextClassifier(tiny_backbone("deberta_v3"), num_classes=2)
    with pytest.raises(KdplugError, match=r"has no attention.*attention_scores/1"):
        model.taps(batch(), ["attention_scores/1"])
    with pytest.raises(KdplugError, match=r"no tap\(s\) \['hidden/9'\].*family deberta_v3"):
        model.taps(batch(), ["hidden/9"])
    with pytest.raises(KdplugError, match="keras-hub has no text classifier for the "
                                          "electra family"):
        HubTextClassifier(tiny_backbone("electra"), num_classes=2).to_task()
    with pytest.raises(KdplugError, match="supported backbones: BertBackbone"):
        family_of(keras.layers.Dense(2))


@pytest.mark.parametrize("family", [f for f in OTHER_FAMILIES if f != "albert"])
def test_truncated_student_copies_the_chosen_layers(family):
    teacher = HubTextClassifier(tiny_backbone(family), num_classes=2, dropout=0.0)
    student = truncated_hub(teacher, [0, 2], num_classes=2, dropout=0.0)
    assert type(student.backbone) is type(teacher.backbone)
    assert student.num_layers == 2
    assert all(w.trainable for w in student.weights)
    x = batch()
    names = ["embeddings", "hidden/1", "logits"]
    t, s = teacher.taps(x, ["embeddings", "hidden/1"]), student.taps(x, names)
    np.testing.assert_allclose(s["embeddings"], t["embeddings"], atol=1e-6)
    np.testing.assert_allclose(s["hidden/1"], t["hidden/1"], atol=1e-5)
    # student layer 2 is teacher layer 3 (index 2): same weights
    for a, b in zip(student.backbone.transformer_layers[1].get_weights(),
                    teacher.backbone.transformer_layers[2].get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(student.classifier.get_weights()[0],
                                  teacher.classifier.get_weights()[0])


def test_truncated_student_from_the_pretrained_snapshot_and_albert_groups():
    teacher = HubTextClassifier(tiny_backbone("roberta"), num_classes=2)
    pretrained = PretrainedWeights(teacher)
    before = teacher.backbone.transformer_layers[0].get_weights()
    for w in teacher.weights:  # "fine-tuning" changes the teacher in place
        w.assign(w + 1.0)
    student = truncated_hub(teacher, [0], num_classes=2, copy_head=False,
                            pretrained=pretrained)
    for a, b in zip(student.backbone.transformer_layers[0].get_weights(), before):
        np.testing.assert_array_equal(a, b)
    # a new head: neither the snapshot's nor the fine-tuned one
    kernel = student.classifier.get_weights()[0]
    assert not np.allclose(kernel, pretrained.get_weights(teacher.classifier)[0])
    assert not np.allclose(kernel, teacher.classifier.get_weights()[0])
    albert = HubTextClassifier(tiny_backbone("albert"), num_classes=2, dropout=0.0)
    shallow = truncated_hub(albert, [0, 1], num_classes=2, dropout=0.0)
    assert shallow.num_layers == 2 and shallow.backbone.num_layers == 2
    x = batch()
    np.testing.assert_allclose(shallow.taps(x, ["hidden/2"])["hidden/2"],
                               albert.taps(x, ["hidden/2"])["hidden/2"], atol=1e-5)
