import numpy as np

from kdplug.terms import LogitMSE


def test_matches_hand_computed_values():
    t = np.array([[1.0, -1.0], [0.0, 2.0]], "float32")
    s = np.array([[0.0, 0.0], [0.0, 0.0]], "float32")
    got = np.asarray(LogitMSE()({"logits": t}, {"logits": s}, {}))
    np.testing.assert_allclose(got, [1.0, 2.0], rtol=1e-6)
    assert LogitMSE.from_config(LogitMSE(weight=2.0).get_config()).initial_weight == 2.0
