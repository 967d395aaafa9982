"""`pooling="mean"` on kdplug's sentence heads: the masked mean of the last
layer's real positions through the pooler and classifier (computed by hand
here), padding that changes nothing, the top layer run in full, FLOPs,
`.keras` round trips, students that inherit it, FastBERT's exits, and the
keras-hub exports that refuse it."""

import keras
import numpy as np
import pytest

from kdplug import KdplugError
from kdplug import testing
from kdplug.evaluation.preset_export import check_presettable
from kdplug.models import BertClassifier
from kdplug.models import BottleneckBertClassifier
from kdplug.models import HubTextClassifier
from kdplug.models import flops
from kdplug.models.sentence_pooling import pool_sequence
from kdplug.students import truncated_bert
from kdplug.students import truncated_hub
from kdplug.testing import families
from kdplug_plugins.fastbert.early_exit_bert import early_exit_bert
from kdplug_plugins.fastbert.exit_branch import ExitBranch
from kdplug_plugins.students.bottleneck import BottleneckStudent
from kdplug_plugins.students.narrow import NarrowStudent

SEQ = testing.SEQUENCE_LENGTH


def masked_mean(hidden, mask):
    """The numpy reference: the mean of the rows `mask` keeps."""
    hidden, mask = np.asarray(hidden, "float64"), np.asarray(mask, "float64")
    return (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)


def dense(layer, x):
    kernel, bias = layer.get_weights()
    return x @ kernel + bias


@pytest.fixture(scope="module")
def batch():
    x, _ = testing.toy_batch(batch_size=4)
    assert 0 < x["padding_mask"].sum() < x["padding_mask"].size  # some padding
    return x


@pytest.fixture(scope="module")
def mean_bert():
    return BertClassifier(testing.tiny_backbone(num_layers=2, seed=1), num_classes=3,
                          dropout=0.0, pooling="mean")


def test_mean_pooling_is_the_masked_mean_through_the_pooler_and_classifier(
        mean_bert, batch):
    taps = mean_bert.taps(batch, ["hidden/2", "pooled", "logits"])
    expected = np.tanh(dense(mean_bert.backbone.pooled_dense,
                             masked_mean(taps["hidden/2"], batch["padding_mask"])))
    np.testing.assert_allclose(taps["pooled"], expected, atol=1e-5)
    np.testing.assert_allclose(taps["logits"], dense(mean_bert.classifier, expected),
                               atol=1e-5)
    # asked alone (as call() asks), the top layer still runs for every position
    alone = mean_bert.taps(batch, ["pooled"])["pooled"]
    np.testing.assert_allclose(alone, expected, atol=1e-5)
    np.testing.assert_allclose(mean_bert(batch), taps["logits"], atol=1e-5)
    assert mean_bert.get_config()["pooling"] == "mean"


def test_padding_positions_change_nothing(mean_bert, batch):
    noisy = dict(batch)
    pad = batch["padding_mask"] == 0
    noisy["token_ids"] = np.where(pad, 7, batch["token_ids"]).astype("int32")
    noisy["segment_ids"] = np.where(pad, 1, batch["segment_ids"]).astype("int32")
    np.testing.assert_allclose(mean_bert(noisy), mean_bert(batch), atol=1e-5)


def test_cls_pooling_is_unchanged_and_differs_from_mean(mean_bert, batch):
    cls = BertClassifier(mean_bert.backbone, num_classes=3, dropout=0.0)
    cls.classifier.set_weights(mean_bert.classifier.get_weights())
    assert cls.pooling == "cls"
    taps = cls.taps(batch, ["hidden/2", "pooled"])
    np.testing.assert_allclose(
        taps["pooled"], np.tanh(dense(cls.backbone.pooled_dense,
                                      np.asarray(taps["hidden/2"])[:, 0])), atol=1e-5)
    assert not np.allclose(cls(batch), mean_bert(batch), atol=1e-4)
    # a config saved before the option existed loads as [CLS]
    config = {k: v for k, v in cls.get_config().items() if k != "pooling"}
    assert BertClassifier.from_config(config).pooling == "cls"


def test_pool_sequence_of_a_row_without_tokens_is_zero():
    x = np.ones((2, 3, 4), "float32")
    mask = np.array([[1, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(pool_sequence(x, mask, "mean"), [[1] * 4, [0] * 4])
    np.testing.assert_array_equal(pool_sequence(x, mask, "cls"), x[:, 0])


def test_options_that_make_no_sense_are_refused():
    backbone = testing.tiny_backbone(num_layers=1)
    with pytest.raises(ValueError, match="pooling must be one of"):
        BertClassifier(backbone, 2, pooling="max")
    with pytest.raises(ValueError, match="per_token head classifies every position"):
        BertClassifier(backbone, 5, per_token=True, pooling="mean")


def test_flops_count_the_top_layer_in_full():
    backbone = testing.tiny_backbone(num_layers=2)
    mean = BertClassifier(backbone, 3, pooling="mean")
    cls = BertClassifier(backbone, 3)
    layer = flops.transformer_layer_flops(SEQ, 16, 32)
    head = flops.dense_flops(1, 16, 16) + flops.dense_flops(1, 16, 3)
    assert mean.flops_per_example(SEQ) == 2 * layer + head
    assert cls.flops_per_example(SEQ) == (
        layer + flops.cls_only_layer_flops(SEQ, 16, 32) + head)


@pytest.mark.parametrize("which", ["bert", "hub", "bottleneck"])
def test_save_and_load_round_trip(which, batch, tmp_path):
    if which == "bert":
        model = BertClassifier(testing.tiny_backbone(num_layers=2), 2, pooling="mean")
    elif which == "hub":
        model = HubTextClassifier(families.tiny_backbone("roberta", testing.VOCAB_SIZE),
                                  2, dropout=0.0, pooling="mean")
    else:
        model = BottleneckBertClassifier(
            testing.VOCAB_SIZE, 2, num_layers=2, hidden_dim=16, intra_dim=8,
            num_heads=2, intermediate_dim=16, num_feedforward=1, embedding_dim=8,
            max_sequence_length=32, pooling="mean")
    path = str(tmp_path / f"{which}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.pooling == "mean"
    np.testing.assert_allclose(loaded(batch), model(batch), atol=1e-6)


@pytest.mark.parametrize("family", ["roberta", "deberta_v3", "albert"])
def test_hub_families_pool_the_masked_mean(family, batch):
    backbone = families.tiny_backbone(family, testing.VOCAB_SIZE, num_layers=2)
    model = HubTextClassifier(backbone, 2, dropout=0.0, pooling="mean")
    taps = model.taps(batch, ["hidden/2", "pooled"])
    expected = model.pooler(masked_mean(taps["hidden/2"], batch["padding_mask"])
                            .astype("float32"))
    np.testing.assert_allclose(taps["pooled"], expected, atol=1e-5)
    np.testing.assert_allclose(model.taps(batch, ["pooled"])["pooled"], expected,
                               atol=1e-5)


def test_bottleneck_pools_the_masked_mean(batch):
    model = BottleneckStudent(BottleneckStudent.Config(
        preset="tiny", num_layers=1, intra_dim=8, num_heads=2, intermediate_dim=16,
        num_feedforward=1, embedding_dim=8)).build(
            BertClassifier(testing.tiny_backbone(num_layers=2), 2, pooling="mean"), 2)
    assert model.pooling == "mean"
    taps = model.taps(batch, ["hidden/1", "pooled"])
    expected = np.tanh(dense(model.pooled_dense,
                             masked_mean(taps["hidden/1"], batch["padding_mask"])))
    np.testing.assert_allclose(taps["pooled"], expected, atol=1e-5)


def test_students_built_from_a_mean_pooled_teacher_are_mean_pooled(mean_bert, batch):
    first = truncated_bert(mean_bert, [0, 1], num_classes=3, dropout=0.0)
    assert first.pooling == "mean"
    # every layer copied: the student is the teacher
    np.testing.assert_allclose(first(batch), mean_bert(batch), atol=1e-5)
    assert truncated_bert(mean_bert, [0], num_classes=3).pooling == "mean"
    narrow = NarrowStudent(NarrowStudent.Config(
        num_layers=1, hidden_dim=8, intermediate_dim=16, num_heads=2)).build(mean_bert, 3)
    assert narrow.pooling == "mean"
    hub = HubTextClassifier(families.tiny_backbone("roberta", testing.VOCAB_SIZE),
                            3, pooling="mean")
    assert truncated_hub(hub, [0], 3).pooling == "mean"
    plain = testing.tiny_bert_classifier(num_classes=3)
    assert truncated_bert(plain, [0], num_classes=3).pooling == "cls"


@pytest.mark.slow
def test_fastbert_exits_and_final_classifier_follow_the_pooling(mean_bert, batch):
    model = early_exit_bert(mean_bert, 3, branch_dim=8, branch_pooling="mean",
                            dropout=0.0)
    assert model.pooling == "mean" and model.bert.pooling == "mean"
    taps = model.taps(batch, ["branch_logits/1", "hidden/1", "logits"])
    np.testing.assert_allclose(taps["logits"], mean_bert(batch), atol=1e-5)
    branch = model.branches[0]
    h = np.tanh(dense(branch.dense, masked_mean(taps["hidden/1"], batch["padding_mask"])))
    np.testing.assert_allclose(taps["branch_logits/1"], dense(branch.out, h), atol=1e-5)
    # adaptive inference, no early exit: the final classifier pools the mean
    logits, layers = model.predict_adaptive(batch, speed=0.0)
    np.testing.assert_allclose(logits, mean_bert(batch), atol=1e-5)
    assert set(layers) == {2}
    config = ExitBranch.from_config(branch.get_config()).get_config()
    assert config["pooling"] == "mean"
    assert branch.flops_per_example(SEQ) == (flops.dense_flops(1, 16, 8)
                                             + flops.dense_flops(1, 8, 3))


def test_keras_hub_exports_refuse_a_mean_pooled_model(mean_bert):
    with pytest.raises(KdplugError, match="reads the \\[CLS\\] vector"):
        mean_bert.to_task()
    hub = HubTextClassifier(families.tiny_backbone("roberta", testing.VOCAB_SIZE),
                            2, pooling="mean")
    with pytest.raises(KdplugError, match="RobertaTextClassifier reads the \\[CLS\\]"):
        hub.to_task()
    with pytest.raises(KdplugError, match="pooling='mean'"):
        check_presettable(mean_bert)
    check_presettable(testing.tiny_bert_classifier())  # [CLS]: exported as before
