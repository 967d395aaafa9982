import numpy as np
import pytest

from kdplug.data.length_buckets import LengthBuckets
from kdplug_plugins.cmlm_seq2seq.cmlm_masking import cmlm_dataset
from kdplug_plugins.cmlm_seq2seq.cmlm_masking import cmlm_mask
from kdplug_plugins.cmlm_seq2seq.cmlm_masking import mask_budget
from kdplug_plugins.cmlm_seq2seq.seq2seq_encoder import Seq2SeqEncoder

from cmlm_helpers import tokenizer  # noqa: F401  (a fixture)

MASK = 4


def batch(rows=400, length=24, seed=0):
    """Rows `[CLS] source [SEP] target [SEP] pad` as ids >= 5, with their
    target masks (the target and its final [SEP])."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 30, (rows, length)).astype("int32")
    target = np.zeros((rows, length), "int32")
    for i in range(rows):
        a, b = rng.integers(1, 8), rng.integers(1, 10)
        target[i, a + 2:a + b + 3] = 1
        ids[i, a + b + 3:] = 0
    return ids, target


def test_only_target_positions_are_masked_and_labelled():
    ids, target = batch()
    masked, positions, labels = (np.asarray(t) for t in cmlm_mask(
        ids, target, seed=(1, 2), rate=0.3, mask_token_id=MASK))
    changed = masked != ids
    assert changed.any() and not (changed & (target == 0)).any()
    assert (masked[changed] == MASK).all()  # always [MASK], no 80/10/10
    valid = labels >= 0
    rows = np.nonzero(valid)[0]
    # positions list exactly the masked ones, labels are the original ids
    assert (changed.sum(1) == valid.sum(1)).all()
    assert (masked[rows, positions[valid]] == MASK).all()
    assert (labels[valid] == ids[rows, positions[valid]]).all()
    assert (positions[~valid] == 0).all()


def test_rate_and_at_least_one_masked_per_row():
    ids, target = batch(rows=2000, seed=1)
    masked, _, _ = (np.asarray(t) for t in cmlm_mask(
        ids, target, seed=(3, 4), rate=0.15, mask_token_id=MASK))
    per_row = (masked != ids).sum(1)
    assert (per_row >= 1).all()
    # conditioned on >= 1 masked, E[masked] = p n / (1 - (1 - p)^n) per row
    n = target.sum(1)
    expected = (0.15 * n / (1 - 0.85 ** n)).sum()
    assert per_row.sum() == pytest.approx(expected, rel=0.05)


def test_same_seed_same_masks_other_seed_other_masks():
    ids, target = batch()
    a = np.asarray(cmlm_mask(ids, target, (5, 6), 0.15, MASK)[0])
    b = np.asarray(cmlm_mask(ids, target, (5, 6), 0.15, MASK)[0])
    c = np.asarray(cmlm_mask(ids, target, (5, 7), 0.15, MASK)[0])
    assert (a == b).all() and (a != c).any()


def test_budget_keeps_the_first_masked_positions_only():
    ids, target = batch(rows=50)
    masked, positions, labels = (np.asarray(t) for t in cmlm_mask(
        ids, target, (0, 0), rate=0.9, mask_token_id=MASK, budget=3))
    assert positions.shape == (50, 3)
    assert ((masked != ids).sum(1) <= 3).all()
    assert mask_budget(64, 0.15) == 29 and mask_budget(3, 0.5) == 4


def test_dataset_redraws_every_epoch_but_not_for_validation(tokenizer):
    encoder = Seq2SeqEncoder(tokenizer, 6, 7, 16)
    sources = ["good movie", "the plot was dull", "fun film", "a very nice film"] * 4
    arrays = encoder.teacher_arrays(sources, sources)

    def epoch(ds):
        return np.concatenate([x["token_ids"].numpy() for x, _ in ds])

    train = cmlm_dataset(arrays, 4, tokenizer.mask_token_id, 0.5, 8, seed=0,
                         shuffle=True)
    assert int(train.cardinality()) == 4
    assert (epoch(train) != epoch(train)).any()
    val = cmlm_dataset(arrays, 4, tokenizer.mask_token_id, 0.5, 8, seed=0)
    first, second = epoch(val), epoch(val)
    assert (first == second).all()
    x, y = next(iter(val))
    assert set(x) == {"token_ids", "segment_ids", "padding_mask", "mask_positions"}
    assert y.shape == (4, 8)


def test_length_buckets_cut_each_batch_before_masking(tokenizer):
    encoder = Seq2SeqEncoder(tokenizer, 6, 7, 24)
    short, long = ["good movie", "fun film"], ["the plot was very dull and slow"] * 2
    sources = [short[0], long[0], short[1], long[1]] * 2
    arrays = encoder.teacher_arrays(sources, sources)
    lengths = arrays["padding_mask"].sum(1)
    ds = cmlm_dataset(arrays, 2, tokenizer.mask_token_id, 0.5, 8, seed=0,
                      length_buckets=LengthBuckets(window=4, multiple=4))
    batches = list(ds)
    assert len(batches) == 4
    seen = []
    for x, y in batches:
        ids, mask = x["token_ids"].numpy(), x["padding_mask"].numpy()
        longest = mask.sum(1).max()
        assert ids.shape[1] == -(-longest // 4) * 4 < 24  # cut, rounded to 4
        assert x["segment_ids"].shape == ids.shape
        assert len(set(mask.sum(1))) == 1  # sorted: the two short, the two long
        positions, labels = x["mask_positions"].numpy(), y.numpy()
        used = labels >= 0
        assert used.any(axis=1).all()
        rows = np.nonzero(used)[0]
        # masked positions hold [MASK] and lie in the target segment
        assert (ids[rows, positions[used]] == tokenizer.mask_token_id).all()
        assert (x["segment_ids"].numpy()[rows, positions[used]] == 1).all()
        seen.extend(mask.sum(1))
    assert sorted(seen) == sorted(lengths)  # every example once
