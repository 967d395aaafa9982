import numpy as np

import kdplug  # noqa: F401  (sets the Keras backend)
from kdplug.terms import CosineHidden


def test_hand_computed_values():
    # Example 1: cosines 0, 1, -1 -> losses 1, 0, 2; the third token is padding.
    # Example 2: cosines 1, 0, 0.6 -> losses 0, 1, 0.4; all valid.
    t = np.array([[[1, 0], [1, 0], [1, 0]],
                  [[2, 0], [0, 3], [3, 4]]], "float32")
    s = np.array([[[0, 1], [5, 0], [-1, 0]],
                  [[1, 0], [1, 0], [1, 0]]], "float32")
    mask = np.array([[1, 1, 0], [1, 1, 1]], "int32")
    term = CosineHidden([("hidden/2", "hidden/1")])
    loss = term({"hidden/2": t}, {"hidden/1": s}, {"padding_mask": mask})
    np.testing.assert_allclose(loss, [0.5, 1.4 / 3], rtol=1e-6)
    # (against numpy on random states, the contract: test_paired_terms.py)
