import types

import numpy as np
import pytest
import tensorflow as tf

from kdplug import Stage
from kdplug import testing
from kdplug.data.masking import apply_masking
from kdplug.data.masking import mask_tokens
from kdplug.data.masking import needs_masking
from kdplug.data.masking import stage_dataset
from kdplug.errors import KdplugError
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import MaskedLMLoss

PAD, SEP, CLS, MASK = 0, 1, 2, 3
OPTIONS = dict(vocabulary_size=64, mask_token_id=MASK, special_token_ids=[PAD, SEP, CLS])
TOKENIZER = types.SimpleNamespace(
    vocabulary_size=lambda: 64, mask_token_id=MASK, cls_token_id=CLS,
    sep_token_id=SEP, pad_token_id=PAD,
)


def batch_with_sep(n=512, seed=0):
    x, y = testing.toy_arrays(num_examples=n, seed=seed)
    ids = x["token_ids"].copy()
    last = x["padding_mask"].sum(1) - 1
    ids[np.arange(n), last] = SEP  # [CLS] ... [SEP] [PAD]...
    return ids, x["padding_mask"], y


def run(ids, mask, seed=(0, 1), **kwargs):
    out = mask_tokens(ids, mask, tf.constant(seed), **{**OPTIONS, **kwargs})
    return {k: v.numpy() for k, v in out.items()}


def test_hand_checked_small_batch():
    ids = np.array([[CLS, 10, 11, 12, 13, SEP, PAD, PAD],
                    [CLS, SEP, PAD, PAD, PAD, PAD, PAD, PAD]], "int32")
    mask = (ids != PAD).astype("int32")
    out = run(ids, mask, max_predictions=3, mask_rate=0.5,
              mask_token_rate=1.0, random_token_rate=0.0)
    # Example 1: 4 eligible tokens, round(0.5 * 4) = 2 masked, all -> [MASK].
    w = out["mask_weights"]
    np.testing.assert_array_equal(w, [[1, 1, 0], [0, 0, 0]])
    pos = out["mask_positions"]
    assert set(pos[0, :2]) <= {1, 2, 3, 4} and pos[0, 0] < pos[0, 1]
    np.testing.assert_array_equal(pos[0, 2:], [0])
    np.testing.assert_array_equal(pos[1], [0, 0, 0])  # nothing eligible
    np.testing.assert_array_equal(out["mask_ids"][0, :2], ids[0, pos[0, :2]])
    expected = ids.copy()
    expected[0, pos[0, :2]] = MASK
    np.testing.assert_array_equal(out["token_ids"], expected)


def test_bert_rule_on_many_examples():
    ids, mask, _ = batch_with_sep()
    out = run(ids, mask)
    P = int(np.ceil(12 * 0.15))
    assert out["mask_positions"].shape == (len(ids), P)
    w = out["mask_weights"] > 0
    eligible = (mask > 0) & ~np.isin(ids, [PAD, SEP, CLS, MASK])
    n_expected = np.minimum(np.maximum(np.round(eligible.sum(1) * 0.15), 1), P)
    np.testing.assert_array_equal(w.sum(1), n_expected)
    pos = out["mask_positions"]
    rows = np.arange(len(ids))[:, None].repeat(P, 1)
    # Only eligible positions are ever selected: never [CLS], [SEP] or padding.
    assert eligible[rows[w], pos[w]].all()
    assert (pos[~w] == 0).all()
    np.testing.assert_array_equal(out["mask_ids"], np.take_along_axis(ids, pos, 1))
    selected = np.zeros(ids.shape, bool)
    selected[rows[w], pos[w]] = True
    changed = out["token_ids"] != ids
    assert not (changed & ~selected).any()
    new = np.take_along_axis(out["token_ids"], pos, 1)[w]
    old = out["mask_ids"][w]
    frac_mask = (new == MASK).mean()
    random = (new != MASK) & (new != old)
    assert 0.75 < frac_mask < 0.85
    assert 0.06 < random.mean() < 0.14  # ~0.1 (a random draw can equal the original)
    assert not np.isin(new[new != MASK], [PAD, SEP, CLS]).any()


def test_seeded():
    ids, mask, _ = batch_with_sep(64)
    a, b, c = run(ids, mask, (5, 6)), run(ids, mask, (5, 6)), run(ids, mask, (5, 7))
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a["token_ids"], c["token_ids"])


def epoch(ds):
    return [x["token_ids"].numpy() for x, _ in ds]


def test_apply_masking_dynamic_and_static():
    ds = testing.toy_dataset(num_examples=32, batch_size=8)
    dynamic = apply_masking(ds, seed=3, **OPTIONS)
    first, second = epoch(dynamic), epoch(dynamic)
    assert not all(np.array_equal(a, b) for a, b in zip(first, second))
    again = epoch(apply_masking(ds, seed=3, **OPTIONS))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    static = apply_masking(ds, seed=3, rerandomize=False, **OPTIONS)
    assert all(np.array_equal(a, b) for a, b in zip(epoch(static), epoch(static)))
    x, y = next(iter(dynamic))
    assert set(x) >= {"token_ids", "padding_mask", "segment_ids", "mask_positions",
                      "mask_ids", "mask_weights"}
    assert y.shape == (8,)


def test_stage_dataset():
    ds = testing.toy_dataset(num_examples=16, batch_size=8)
    mlm = MaskedLMLoss("hidden/1", vocabulary_size=64, hidden_dim=16, max_predictions=2)
    plain = Stage("task", [HardLabelCrossEntropy()])
    assert stage_dataset(ds, plain, TOKENIZER, seed=0) is ds
    assert needs_masking(plain.terms) is None
    general = Stage("general", [mlm], data="unlabelled")
    x, y = next(iter(stage_dataset(ds, general, TOKENIZER, seed=0)))
    assert (y.numpy() == -1).all()
    assert x["mask_positions"].shape == (8, 2)
    x, y = next(iter(stage_dataset(ds, general, TOKENIZER, seed=0, training=False)))
    assert (y.numpy() >= 0).all()  # validation keeps its labels
    cached = ds.map(lambda x, y: ({**x, "teacher/logits": tf.zeros((8, 2))}, y))
    with pytest.raises(KdplugError, match="cached teacher outputs"):
        stage_dataset(cached, general, TOKENIZER, seed=0)
    with pytest.raises(KdplugError, match="data must be"):
        stage_dataset(ds, Stage("x", [mlm], data="augmented"), TOKENIZER, seed=0)
    other = MaskedLMLoss("hidden/1", vocabulary_size=64, hidden_dim=16, mask_rate=0.3,
                         name="mlm2")
    with pytest.raises(KdplugError, match="different masking"):
        needs_masking([mlm, other])


@pytest.mark.parametrize("max_predictions", [None, 2, 20])
def test_batches_cut_to_their_longest_sentence_mask_as_many_tokens(max_predictions):
    # Length buckets trim batches, so the length is known only at run time:
    # P follows each batch (ceil(length * rate), or max_predictions, at most
    # the length) and every example masks as many tokens as padded.
    ids, mask, _ = batch_with_sep(64)
    ids[:, 9:], mask[:, 9:] = PAD, 0  # longest 9 -> trimmed batch of width 9
    options = {**OPTIONS, "max_predictions": max_predictions}
    trimmed = tf.function(lambda i, m: mask_tokens(i, m, tf.constant([4, 2]), **options),
                          input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
    cut = {k: v.numpy() for k, v in trimmed(ids[:, :9], mask[:, :9]).items()}
    full = run(ids, mask, (4, 2), max_predictions=max_predictions)
    slots = {None: 2, 2: 2, 20: 9}[max_predictions]  # ceil(9 * 0.15) = 2
    assert cut["mask_positions"].shape == (64, slots)
    assert cut["token_ids"].shape == (64, 9)
    np.testing.assert_array_equal(cut["mask_weights"].sum(1), full["mask_weights"].sum(1))
    assert (cut["mask_positions"] < 9).all()
    selected = np.zeros((64, 9), bool)
    rows = np.repeat(np.arange(64), slots)
    selected[rows, cut["mask_positions"].ravel()] = cut["mask_weights"].ravel() > 0
    changed = cut["token_ids"] != ids[:, :9]
    assert not (changed & ~selected).any()  # only selected tokens change
    assert not (selected & (mask[:, :9] == 0)).any()  # padding never selected
