import numpy as np

from kdplug.terms import LogitMSE
from kdplug.testing import run_serialization_test
from kdplug.testing import run_term_test


def test_matches_hand_computed_values():
    t = np.array([[1.0, -1.0], [0.0, 2.0]], "float32")
    s = np.array([[0.0, 0.0], [0.0, 0.0]], "float32")
    got = np.asarray(LogitMSE()({"logits": t}, {"logits": s}, {}))
    np.testing.assert_allclose(got, [1.0, 2.0], rtol=1e-6)
    assert run_serialization_test(LogitMSE(weight=2.0)).initial_weight == 2.0


def test_term_contract():
    rng = np.random.default_rng(0)
    run_term_test(LogitMSE(weight=2.0), {"logits": rng.normal(size=(3, 4))},
                  {"logits": rng.normal(size=(3, 4)).astype("float32")}, {})
