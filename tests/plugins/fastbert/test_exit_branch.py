import keras
import numpy as np
import pytest

from kdplug_plugins.fastbert.exit_branch import ExitBranch


def softmax(z):
    z = z - z.max(-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(-1, keepdims=True)


def reference(branch, hidden, mask):
    """The branch in numpy: project, attention at [CLS] (residual), tanh head."""
    w = {layer.name: layer.get_weights() for layer in
         (branch.project, branch.query, branch.key, branch.value,
          branch.attention_out, branch.dense, branch.out)}
    dense = lambda x, name: x @ w[name][0] + (w[name][1:] or [0])[0]  # noqa: E731
    h = dense(hidden, "project")
    heads, size = branch.num_heads, branch.hidden_dim // branch.num_heads
    q = dense(h[:, 0], "query").reshape(-1, heads, size)
    k = dense(h, "key").reshape(len(h), -1, heads, size)
    v = dense(h, "value").reshape(len(h), -1, heads, size)
    scores = np.einsum("bhd,bshd->bhs", q, k) / np.sqrt(size)
    scores = np.where(mask[:, None, :] > 0, scores, -np.inf)
    context = np.einsum("bhs,bshd->bhd", softmax(scores), v).reshape(len(h), -1)
    pooled = h[:, 0] + dense(context, "attention_out")
    return dense(np.tanh(dense(pooled, "dense")), "out")


def test_attention_branch_matches_numpy_and_ignores_padding():
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(3, 5, 6)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]], "int32")
    branch = ExitBranch(6, 4, 3, num_heads=2)
    for layer in (branch.key, branch.value, branch.query, branch.project):
        weights = layer.get_weights()  # larger kernels: attention far from uniform
        weights[0] = rng.normal(0, 0.7, weights[0].shape).astype("float32")
        layer.set_weights(weights)
    got = branch(hidden, padding_mask=mask).numpy()
    np.testing.assert_allclose(got, reference(branch, hidden, mask), rtol=1e-5, atol=1e-6)
    changed = hidden.copy()
    changed[mask == 0] = 100.0  # padded positions are never read
    np.testing.assert_allclose(branch(changed, padding_mask=mask).numpy(), got, atol=1e-6)
    # the one-token example only attends to [CLS]
    assert not np.allclose(got[2], branch(hidden, padding_mask=np.ones_like(mask))[2])


def test_cls_branch_reads_only_cls_and_configs_round_trip():
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(2, 4, 6)).astype("float32")
    branch = ExitBranch(6, 4, 2, pooling="cls")
    np.testing.assert_allclose(branch(hidden).numpy(), branch(hidden[:, 0]).numpy())
    for pooling in ("attention", "cls"):
        b = ExitBranch(6, 4, 2, pooling=pooling, num_heads=4, dropout=0.1)
        clone = ExitBranch.from_config(b.get_config())
        assert (clone.pooling, clone.num_heads, clone.dropout) == (pooling, 4, 0.1)
        assert len(clone.weights) == len(b.weights) == {"attention": 13, "cls": 4}[pooling]
        model = keras.Sequential([keras.Input((4, 6)), b])
        assert model(hidden).shape == (2, 2)


def test_flops_and_bad_arguments():
    att = ExitBranch(384, 128, 2)
    cls = ExitBranch(384, 128, 2, pooling="cls")
    assert cls.flops_per_example(48) == 2 * (384 * 128 + 128 * 2)
    # projection + keys/values over 48 positions dominate: ~8.0 MFLOPs
    expected = 2 * (48 * 384 * 128 + 2 * 48 * 128 * 128 + 3 * 128 * 128
                    + 2 * 48 * 128 + 128 * 2)
    assert att.flops_per_example(48) == expected
    with pytest.raises(ValueError, match="pooling must be one of"):
        ExitBranch(6, 4, 2, pooling="mean")
    with pytest.raises(ValueError, match="must divide hidden_dim"):
        ExitBranch(6, 4, 2, num_heads=3)
