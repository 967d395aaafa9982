import keras
import numpy as np
import pytest

from kdplug_plugins.fastbert.exit_branch import ExitBranch


def softmax(z):
    z = z - z.max(-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(-1, keepdims=True)


def reference(branch, hidden, mask, form="residual"):
    """The branch in numpy. `paper` (FastBERT's reference code):
    h = tanh(X W0 + b0), a = Attention(h)[CLS], tanh(a W1 + b1) W2 + b2;
    `residual` (kdplug 0.1): h = X W0 + b0, a = h[CLS] + Attention(h)[CLS]."""
    w = {layer.name: layer.get_weights() for layer in
         (branch.project, branch.query, branch.key, branch.value,
          branch.attention_out, branch.dense, branch.out)}
    dense = lambda x, name: x @ w[name][0] + (w[name][1:] or [0])[0]  # noqa: E731
    h = dense(hidden, "project")
    if form == "paper":
        h = np.tanh(h)
    heads, size = branch.num_heads, branch.hidden_dim // branch.num_heads
    q = dense(h[:, 0], "query").reshape(-1, heads, size)
    k = dense(h, "key").reshape(len(h), -1, heads, size)
    v = dense(h, "value").reshape(len(h), -1, heads, size)
    scores = np.einsum("bhd,bshd->bhs", q, k) / np.sqrt(size)
    scores = np.where(mask[:, None, :] > 0, scores, -np.inf)
    context = np.einsum("bhs,bshd->bhd", softmax(scores), v).reshape(len(h), -1)
    pooled = dense(context, "attention_out")
    if form == "residual":
        pooled = pooled + h[:, 0]
    return dense(np.tanh(dense(pooled, "dense")), "out")


@pytest.mark.parametrize("form", ["paper", "residual"])
def test_attention_branch_matches_numpy_and_ignores_padding(form):
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(3, 5, 6)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]], "int32")
    branch = ExitBranch(6, 4, 3, num_heads=2, form=form)
    for layer in (branch.key, branch.value, branch.query, branch.project):
        weights = layer.get_weights()  # larger kernels: attention far from uniform
        weights[0] = rng.normal(0, 0.7, weights[0].shape).astype("float32")
        layer.set_weights(weights)
    got = branch(hidden, padding_mask=mask).numpy()
    np.testing.assert_allclose(got, reference(branch, hidden, mask, form),
                               rtol=1e-5, atol=1e-6)
    other = {"paper": "residual", "residual": "paper"}[form]
    assert not np.allclose(got, reference(branch, hidden, mask, other), rtol=0.1, atol=0)
    changed = hidden.copy()
    changed[mask == 0] = 100.0  # padded positions are never read
    np.testing.assert_allclose(branch(changed, padding_mask=mask).numpy(), got, atol=1e-6)
    # the one-token example only attends to [CLS]
    assert not np.allclose(got[2], branch(hidden, padding_mask=np.ones_like(mask))[2])


def test_paper_form_by_hand():
    # input_dim = hidden_dim = 2, one head, identity-like weights, zero biases:
    # X = [[1, 0], [0, 2]] (two tokens), W0 = I: h = tanh(X) = [[t1, 0], [0, t2]]
    # with t1 = tanh 1, t2 = tanh 2; Wq = Wk = 0: uniform attention (1/2, 1/2);
    # Wv = Wo = I: a = mean(h) = [t1/2, t2/2] (no residual);
    # W1 = I: tanh(a); W2 = [[1], [-1]] summed -> tanh(t1/2) - tanh(t2/2)
    branch = ExitBranch(2, 2, 1, num_heads=1, form="paper")
    eye, zero = np.eye(2, dtype="float32"), np.zeros(2, "float32")
    branch.project.set_weights([eye, zero])
    branch.query.set_weights([0 * eye, zero])
    branch.key.set_weights([0 * eye])
    branch.value.set_weights([eye, zero])
    branch.attention_out.set_weights([eye, zero])
    branch.dense.set_weights([eye, zero])
    branch.out.set_weights([np.array([[1.0], [-1.0]], "float32"),
                            np.zeros(1, "float32")])
    x = np.array([[[1.0, 0.0], [0.0, 2.0]]], "float32")
    t1, t2 = np.tanh(1.0), np.tanh(2.0)
    got = branch(x, padding_mask=np.ones((1, 2), "int32")).numpy()
    np.testing.assert_allclose(got, [[np.tanh(t1 / 2) - np.tanh(t2 / 2)]], rtol=1e-6)
    # residual: no tanh after W0, a = h[CLS] + mean(h) = [1 + 1/2, 0 + 1]
    branch.form = "residual"
    got = branch(x, padding_mask=np.ones((1, 2), "int32")).numpy()
    np.testing.assert_allclose(got, [[np.tanh(1.5) - np.tanh(1.0)]], rtol=1e-6)


def test_cls_branch_reads_only_cls_and_configs_round_trip():
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(2, 4, 6)).astype("float32")
    branch = ExitBranch(6, 4, 2, pooling="cls")
    np.testing.assert_allclose(branch(hidden).numpy(), branch(hidden[:, 0]).numpy())
    for pooling in ("attention", "cls"):
        b = ExitBranch(6, 4, 2, pooling=pooling, num_heads=4, dropout=0.1,
                       form="paper")
        clone = ExitBranch.from_config(b.get_config())
        assert (clone.pooling, clone.num_heads, clone.dropout) == (pooling, 4, 0.1)
        assert clone.form == "paper"
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
        ExitBranch(6, 4, 2, pooling="max")
    # the mean of the positions is no matmul: the cls branch's cost
    assert ExitBranch(384, 128, 2, pooling="mean").flops_per_example(48) == (
        cls.flops_per_example(48))
    # a config saved before `form` existed builds kdplug 0.1's branch
    config = ExitBranch(6, 4, 2, form="paper").get_config()
    del config["form"]
    assert ExitBranch.from_config(config).form == "residual"
    assert ExitBranch(384, 128, 2, form="paper").flops_per_example(48) == expected
    with pytest.raises(ValueError, match="form must be one of"):
        ExitBranch(6, 4, 2, form="tanh")
    with pytest.raises(ValueError, match="must divide hidden_dim"):
        ExitBranch(6, 4, 2, num_heads=3)
