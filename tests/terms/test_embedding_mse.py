import numpy as np

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug import testing
from kdplug.terms import EmbeddingMSE
from kdplug.testing import run_term_test


def test_hand_computed_value_with_projection_and_padding():
    # W_e = [[1, 0, 1]], b = [0, 1, 0]: s = [[2], [1], [pad]] -> [2, 1, 2], [1, 1, 1]
    # teacher [1, 1, 1], [1, 1, 1]: token 0: (1 + 0 + 1)/3, token 1: 0
    # -> (2/3 + 0) / 2 = 1/3; the padded token (s = 50) is ignored
    term = EmbeddingMSE(teacher_width=3, student_width=1)
    term.projections["embeddings"].set_weights(
        [np.array([[1, 0, 1]], "float32"), np.array([0, 1, 0], "float32")])
    t = np.ones((1, 3, 3), "float32")
    s = np.array([[[2], [1], [50]]], "float32")
    out = term({"embeddings": t}, {"embeddings": s},
               {"padding_mask": np.array([[1, 1, 0]], "int32")})
    np.testing.assert_allclose(np.asarray(out), [1.0 / 3.0], rtol=1e-6)
    assert term.name == "embedding_mse"


def test_equal_widths_need_no_projection_and_config_round_trips():
    term = EmbeddingMSE(teacher_width=4, student_width=4, weight=3.0)
    assert term.projections == {}
    t = np.zeros((1, 2, 4), "float32")
    s = np.full((1, 2, 4), 2.0, "float32")
    out = term({"embeddings": t}, {"embeddings": s},
               {"padding_mask": np.array([[1, 1]], "int32")})
    np.testing.assert_allclose(np.asarray(out), [4.0])
    projected = EmbeddingMSE(teacher_width=16, student_width=8)
    config = projected.get_config()
    assert (config["teacher_width"], config["student_width"]) == (16, 8)
    assert "pairs" not in config and "widths" not in config
    assert projected.projections["embeddings"].dense.kernel.shape == (8, 16)
    rng = np.random.default_rng(0)
    run_term_test(projected, {"embeddings": rng.normal(size=(3, 4, 16))},
                  {"embeddings": rng.normal(size=(3, 4, 8)).astype("float32")},
                  {"padding_mask": np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])})


def test_from_models():
    teacher = testing.tiny_bert_classifier(num_layers=1, hidden_dim=16)
    student = testing.tiny_bert_classifier(num_layers=1, hidden_dim=8)
    term = EmbeddingMSE.from_models(teacher, student)
    assert (term.teacher_width, term.student_width) == (16, 8)
    assert term.pairs == (("embeddings", "embeddings"),)
