"""The teacher-output precompute in length buckets stores the padded entry."""

import numpy as np
import pytest
from test_output_cache import eager_cache
from test_output_cache import make_encoder
from test_output_cache import make_examples
from test_output_cache import make_teacher

from kdplug.data.length_buckets import LengthBuckets
from kdplug.models.attention_logits import MASKED_SCORE
from kdplug.teacher.output_cache import TeacherCache
from kdplug.teacher.output_cache import pad_tap

TAPS = ["attention/2", "attention_scores/1", "embeddings", "hidden/2", "logits"]
# padded far past the longest sentence (11 tokens): most positions are cut
SEQ = 24
# the teacher's float32 outputs computed at another width: summation order only
ATOL = 2e-5


@pytest.fixture(scope="module")
def parts():
    return make_teacher(), make_encoder(SEQ), make_examples(n=30, seed=4)


def entries(tmp_path, parts, dtype="float32", **kwargs):
    """`(padded, bucketed)` caches of the same examples, each precomputed in
    a folder of its own, and the padding mask of every example; `kwargs` go
    to `TeacherCache` (default: eager)."""
    teacher, encoder, examples = parts
    kwargs.setdefault("run_eagerly", True)
    out = []
    for name, buckets in (("padded", None), ("bucketed", LengthBuckets(4, 4))):
        cache = TeacherCache(
            teacher, encoder, examples, TAPS, dtype=dtype, shard_size=16, batch_size=6,
            root=str(tmp_path / name), length_buckets=buckets, **kwargs)
        cache.precompute()
        out.append(cache)
    return (*out, encoder.encode_examples(examples)["padding_mask"].astype(bool))


def assert_equal_where_real(padded, bucketed, mask, atol):
    """Every tap equal at each example's real positions; the masked keys of
    attention maps equal everywhere."""
    for tap in TAPS:
        a, b = padded[f"teacher/{tap}"], bucketed[f"teacher/{tap}"]
        assert a.shape == b.shape and a.dtype == b.dtype, tap
        for i, real in enumerate(mask):
            n = int(real.sum())
            if tap == "logits":
                np.testing.assert_allclose(b[i], a[i], rtol=0, atol=atol)
            elif tap in ("embeddings", "hidden/2"):
                np.testing.assert_allclose(b[i, :n], a[i, :n], rtol=0, atol=atol)
            else:  # (heads, queries, keys)
                np.testing.assert_allclose(b[i, :, :n, :n], a[i, :, :n, :n],
                                           rtol=0, atol=atol)
                np.testing.assert_array_equal(b[i, :, :, n:], a[i, :, :, n:])


def test_bucketed_precompute_stores_the_padded_entry(tmp_path, parts):
    padded, bucketed, mask = entries(tmp_path, parts)
    assert mask.sum(axis=1).max() < SEQ // 2  # every batch is cut
    assert bucketed.key == padded.key
    assert_equal_where_real(padded.load(), bucketed.load(), mask, ATOL)
    for index in range(padded.num_shards):  # the same seeded order, stored
        with np.load(padded.shard_path(index)) as a, \
                np.load(bucketed.shard_path(index)) as b:
            np.testing.assert_array_equal(a["index"], b["index"])
            assert sorted(a.files) == sorted(b.files)


@pytest.mark.slow
def test_float16_entries_are_equal_up_to_storage_precision(tmp_path, parts):
    padded, bucketed, mask = entries(tmp_path, parts, dtype="float16")
    # one float16 unit in the last place of values below 8
    assert_equal_where_real(padded.load(), bucketed.load(), mask, 2.0 ** -8)


@pytest.mark.slow
def test_traced_precompute_traces_once_for_every_width(tmp_path, parts):
    padded, bucketed, mask = entries(tmp_path, parts, run_eagerly=False,
                                     jit_compile=False)
    assert_equal_where_real(padded.load(), bucketed.load(), mask, ATOL)
    # a trace for the first width, then one for any width
    assert bucketed._forward.experimental_get_tracing_count() <= 2


def test_batches_are_full_and_cut_to_multiples(tmp_path, parts):
    teacher, encoder, examples = parts
    seen = []

    class Recording:
        """The teacher, recording the shape of every batch it reads."""
        available_taps = teacher.available_taps
        weights = teacher.weights

        def taps(self, x, names, training=False):
            seen.append(tuple(x["token_ids"].shape))
            return teacher.taps(x, names, training=training)

    cache = eager_cache(Recording(), encoder, examples, ["logits"], shard_size=16,
                        batch_size=6, root=str(tmp_path),
                        length_buckets=LengthBuckets(window=4, multiple=4))
    cache.precompute()
    assert {size for size, _ in seen} == {6}  # a shard's last batch filled up
    assert len(seen) == 3 + 3  # shards of 16 and 14 examples, 6 a batch
    widths = [width for _, width in seen]
    assert all(w % 4 == 0 or w == SEQ for w in widths) and min(widths) < SEQ


def test_pad_tap_writes_the_masked_values():
    scores = pad_tap(np.ones((1, 1, 2, 2), "float32"), "attention_scores/0", 3)[0, 0]
    np.testing.assert_array_equal(scores, [[1, 1, MASKED_SCORE], [1, 1, MASKED_SCORE],
                                           [MASKED_SCORE] * 3])
    probs = pad_tap(np.ones((1, 1, 2, 2), "float16"), "attention/0", 3)[0, 0]
    np.testing.assert_array_equal(probs, [[1, 1, 0], [1, 1, 0], [0, 0, 0]])
    assert pad_tap(np.ones((2, 1, 1, 1), "float16"), "attention_scores/0", 2).min() == -3e4
    np.testing.assert_array_equal(pad_tap(np.ones((1, 2)), "logits", 5), np.ones((1, 2)))
