import keras
import numpy as np
import pytest

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug import testing
from kdplug.errors import KdplugError
from kdplug.mapping import Projection
from kdplug.terms import ProjectedHiddenMSE
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test

MASK = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]], "int32")


def np_masked_mse(t, s, mask):
    per_token = ((s - t) ** 2).mean(-1)
    valid = mask.sum(-1)
    return np.where(valid > 0, (per_token * mask).sum(-1) / np.maximum(valid, 1), 0.0)


def test_hand_computed_value_without_projection():
    # example 0: tokens 0, 1 valid: mean_n (s-t)^2 = (1+0)/2 = .5 and (4+4)/2 = 4
    #            -> (0.5 + 4) / 2 = 2.25 (the padded token's 100s are ignored)
    # example 1: token 0 only: (9 + 1)/2 = 5;  example 2: no valid token -> 0
    t = np.zeros((3, 3, 2), "float32")
    s = np.array([[[1, 0], [2, -2], [100, 100]],
                  [[3, 1], [50, 50], [7, 7]],
                  [[9, 9], [9, 9], [9, 9]]], "float32")
    term = ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[(2, 2)])
    assert term.projections == {}
    out = term({"hidden/2": t}, {"hidden/1": s}, {"padding_mask": MASK})
    np.testing.assert_allclose(np.asarray(out), [2.25, 5.0, 0.0], rtol=1e-6)


def test_projection_is_applied_and_pairs_are_summed():
    rng = np.random.default_rng(0)
    t1 = rng.normal(size=(3, 3, 4)).astype("float32")
    t2 = rng.normal(size=(3, 3, 4)).astype("float32")
    s1 = rng.normal(size=(3, 3, 2)).astype("float32")
    s2 = rng.normal(size=(3, 3, 4)).astype("float32")
    term = ProjectedHiddenMSE(
        [("hidden/2", "hidden/1"), ("hidden/4", "hidden/2")],
        widths=[(4, 2), (4, 4)], weight=0.5)
    # a projection only for the width-mismatched pair
    assert list(term.projections) == ["hidden/1"]
    projection = term.projections["hidden/1"]
    assert isinstance(projection, Projection)
    assert (projection.input_dim, projection.output_dim) == (2, 4)
    kernel = rng.normal(size=(2, 4)).astype("float32")
    bias = rng.normal(size=(4,)).astype("float32")
    projection.set_weights([kernel, bias])
    expected = np_masked_mse(t1, s1 @ kernel + bias, MASK) + np_masked_mse(t2, s2, MASK)
    run_term_test(term, {"hidden/2": t1, "hidden/4": t2},
                  {"hidden/1": s1, "hidden/2": s2}, {"padding_mask": MASK},
                  expected=expected)
    assert float(term.weight.numpy()) == 0.5
    # the projection's weights are the term's (trainable) weights
    assert len(term.trainable_weights) == 2


def test_config_round_trip_rebuilds_projections():
    term = ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[(4, 2)],
                              weight=2.0, use_bias=False)
    config = term.get_config()
    assert config["pairs"] == [["hidden/2", "hidden/1"]]
    assert config["widths"] == [[4, 2]]
    clone = run_serialization_test(term)
    assert clone.name == "hidden_mse"
    assert clone.projections["hidden/1"].dense.kernel.shape == (2, 4)
    assert clone.projections["hidden/1"].dense.bias is None
    assert clone.widths == ((4, 2),)


def test_from_models_reads_widths_and_errors():
    teacher = testing.tiny_bert_classifier(num_layers=2, hidden_dim=16)
    student = testing.tiny_bert_classifier(num_layers=1, hidden_dim=8)
    term = ProjectedHiddenMSE.from_models(teacher, student,
                                          [("hidden/2", "hidden/1")])
    assert term.widths == ((16, 8),)
    with pytest.raises(KdplugError, match="student tap"):
        ProjectedHiddenMSE.from_models(teacher, student, [("hidden/2", "hidden/5")])
    with pytest.raises(KdplugError, match="widths"):
        ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[])
    with pytest.raises(KdplugError, match="padding_mask"):
        term({"hidden/2": np.zeros((1, 2, 16), "float32")},
             {"hidden/1": np.zeros((1, 2, 8), "float32")}, {})


def test_shared_projection_serves_every_pair_and_the_embedding_term():
    # one W (kernel K, bias b) for both mismatched pairs and the embeddings
    from kdplug.terms import EmbeddingMSE

    fit_dense = Projection(4, 2, name="fit_dense")
    kernel = np.array([[1, 0, 2, 0], [0, 1, 0, -1]], "float32")
    bias = np.array([0, 0, 1, 0], "float32")
    fit_dense.set_weights([kernel, bias])
    term = ProjectedHiddenMSE([("hidden/2", "hidden/1"), ("hidden/4", "hidden/2")],
                              widths=[(4, 2), (4, 2)], shared_projection=fit_dense)
    embedding = EmbeddingMSE(4, 2, shared_projection=fit_dense)
    assert term.projections == {} and embedding.projections == {}
    assert len(term.trainable_weights) == 2
    assert {id(w) for w in term.trainable_weights} == {
        id(w) for w in embedding.trainable_weights}
    # s = [1, 2] -> sW + b = [1, 2, 3, -2]; against t = 0: (1 + 4 + 9 + 4)/4 = 4.5
    # s = [0, 0] -> [0, 0, 1, 0]: 1/4 (one valid token each)
    t = np.zeros((1, 1, 4), "float32")
    mask = np.array([[1]], "int32")
    s1 = np.array([[[1, 2]]], "float32")
    s2 = np.zeros((1, 1, 2), "float32")
    out = term({"hidden/2": t, "hidden/4": t}, {"hidden/1": s1, "hidden/2": s2},
               {"padding_mask": mask})
    np.testing.assert_allclose(np.asarray(out), [4.5 + 0.25], rtol=1e-6)
    out = embedding({"embeddings": t}, {"embeddings": s1}, {"padding_mask": mask})
    np.testing.assert_allclose(np.asarray(out), [4.5], rtol=1e-6)
    # the config carries the layer; a config without the key (kdplug 0.1)
    # builds per-layer projections
    run_serialization_test(term)
    config = term.get_config()
    assert config["shared_projection"] is fit_dense
    clone = ProjectedHiddenMSE.from_config(
        {**config, "shared_projection": keras.saving.serialize_keras_object(fit_dense)})
    assert clone.shared_projection.output_dim == 4 and clone.projections == {}
    config.pop("shared_projection")
    old = ProjectedHiddenMSE.from_config(config)
    assert old.shared_projection is None
    assert list(old.projections) == ["hidden/1", "hidden/2"]
    with pytest.raises(KdplugError, match="shared projection maps 2 -> 4"):
        ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[(4, 3)],
                           shared_projection=fit_dense)
