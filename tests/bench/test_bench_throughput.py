"""bench/throughput.py: the teacher-token accounting printed with the table."""

import numpy as np
import tensorflow as tf
from conftest import load_bench_script

throughput = load_bench_script("throughput")


def batch(lengths, sequence_length=64):
    mask = np.arange(sequence_length)[None, :] < np.array(lengths)[:, None]
    return {"padding_mask": tf.constant(mask.astype("int32"))}, None


def test_token_share_counts_what_the_pipeline_runs():
    # 8 sentences: trimmed as a whole to 48 of 64 positions; in 4 sorted
    # chunks of 2: lengths (3, 5) -> 8, (9, 10) -> 16, (17, 20) -> 24, (33, 41) -> 48.
    raw = [batch([41, 3, 17, 9, 33, 5, 20, 10])]
    assert throughput.token_share(raw, 1) == 48 / 64
    assert throughput.token_share(raw, 4) == (8 + 16 + 24 + 48) * 2 / (8 * 64)
    # two batches: shares are of all tokens together
    raw.append(batch([64] * 8))
    assert throughput.token_share(raw, 1) == (48 + 64) / 128
