"""bench/throughput.py: its section rendered from a stored measurement, and
the teacher-token accounting printed with the table."""

import json

import numpy as np
import pytest
import tensorflow as tf

PIPED_WHOLE = "kdplug kd, teacher pipeline (dtype auto, whole batch trimmed)"
PIPED = "kdplug kd, teacher pipeline (defaults: dtype auto, 4 length-sorted chunks)"


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("throughput")


def batch(lengths, sequence_length=64):
    mask = np.arange(sequence_length)[None, :] < np.array(lengths)[:, None]
    return {"padding_mask": tf.constant(mask.astype("int32"))}, None


def test_token_share_counts_what_the_pipeline_runs(bench):
    # 8 sentences: trimmed as a whole to 48 of 64 positions; in 4 sorted
    # chunks of 2: lengths (3, 5) -> 8, (9, 10) -> 16, (17, 20) -> 24, (33, 41) -> 48.
    lengths = bench.padding_lengths([batch([41, 3, 17, 9, 33, 5, 20, 10])])
    assert lengths == [[41, 3, 17, 9, 33, 5, 20, 10]]
    assert bench.token_share(lengths, 64, 1) == 48 / 64
    assert bench.token_share(lengths, 64, 4) == (8 + 16 + 24 + 48) * 2 / (8 * 64)
    # two batches: shares are of all tokens together
    lengths += bench.padding_lengths([batch([64] * 8)])
    assert bench.token_share(lengths, 64, 1) == (48 + 64) / 128


def measurement():
    """A stored measurement written by hand: batch 32, so a step of s
    seconds is 32 / s examples/s (seconds that are powers of two give exact
    rates)."""
    variants = {
        "student fine-tuning": [0.5, 0.25, 1.0],                      # 64, 128, 32
        "teacher forward": [0.25] * 3,                                # 128
        "teacher forward, pipeline copy (float32, whole batch trimmed)": [0.125] * 3,
        "teacher forward, pipeline copy (float32, 4 length-sorted chunks)": [0.125] * 3,
        "teacher forward, bfloat16 copy (no XLA, untrimmed)": [1.0] * 3,  # 32
        "kdplug kd online": [0.64] * 3,                               # 50
        "kdplug kd cached teacher": [1.0] * 3,                        # 32
        PIPED_WHOLE: [0.625] * 3,                                     # 51.2
        PIPED: [0.32] * 3,                                            # 100
        "keras.distillation.Distiller": [0.5] * 3,                    # 64
    }
    return {
        "machine": {"arch": "x86_64", "cpu": "test cpu", "cpus": 2, "tensorflow": "2.21.0",
                    "keras": "3.15.1", "pipeline_dtype": "float32"},
        "settings": {"batch_size": 32, "sequence_length": 64, "batches": 1, "rounds": 3,
                     "steps": 1},
        "finished": "2026-11-29T06:26:00+00:00",
        "step_seconds": variants,
        "lengths": [[41, 3, 30, 9, 33, 5, 17, 10]],
        "bf16_agreement": {"sentences": [32, 32], "argmax_same": [32, 31],
                           "max_abs_logit_diff": [0.0004, 0.0021]},
        "augmenters": {"mask": {"texts": 512, "seconds": 0.05},
                       "tang": {"texts": 512, "seconds": 0.2}},
    }


def test_section_from_a_stored_measurement(bench):
    lines = bench.render(measurement()).splitlines()
    assert lines[0] == (
        "Machine: x86_64 test cpu, 2 CPU cores, TF 2.21.0, Keras 3.15.1; batch 32, "
        "sequence 64, 3 interleaved rounds x 1 steps after warm-up; pipeline dtype "
        "auto = float32 here.")
    # 32 / [0.5, 0.25, 1.0] = [64, 128, 32]: median 64, min 32, max 128
    assert "| student fine-tuning | 64.0 | 32.0 | 128.0 |" in lines
    assert f"| {PIPED_WHOLE} | 51.2 | 51.2 | 51.2 |" in lines  # 32 / 0.625
    # additive bound 1 / (1/64 + 1/128) = 128/3 = 42.67 examples/s
    assert lines[lines.index("| ratio | measured | target | met |") + 2:][:6] == [
        # cached 32 / student 64 = 0.5
        "| cached-teacher kd / student fine-tuning | 0.50 | >= 1.00 | **no** |",
        # online 50 / (128/3) = 1.171875
        "| online kd (teacher in step) / additive bound 1/(1/student + 1/teacher) "
        "| 1.17 | >= 1.10 | yes |",
        # whole batch trimmed 51.2 / (128/3) = 1.2
        "| online kd (teacher pipeline, whole batch trimmed) / additive bound "
        "| 1.20 | >= 1.10 | yes |",
        # defaults 100 / (128/3) = 2.34375
        "| online kd (teacher pipeline, defaults) / additive bound | 2.34 | >= 1.10 | yes |",
        # online 50 / keras 64 = 0.78125
        "| kdplug kd online (teacher in step) / keras.distillation.Distiller "
        "| 0.78 | >= 1.15 | **no** |",
        # defaults 100 / keras 64 = 1.5625
        "| kdplug kd online (teacher pipeline) / keras.distillation.Distiller "
        "| 1.56 | >= 1.15 | yes |",
    ]
    # longest 41 -> 48 of 64 = 75%; sorted chunks of 2: (3, 5) -> 8, (9, 10) -> 16,
    # (17, 30) -> 32, (33, 41) -> 48: 2 * 104 / (8 * 64) = 40.6%
    assert ("Teacher tokens computed per batch: 75% of the padded batch with the whole "
            "batch trimmed, 41% in 4 length-sorted chunks.") in lines
    # 32 + 32 sentences, 32 + 31 argmax the same, the larger difference 0.0021
    assert ("bfloat16 teacher copy vs float32 on 64 sentences: argmax agreement 63/64, "
            "max |logit difference| 0.002.") in lines
    # 512 / 0.05 = 10240, 512 / 0.2 = 2560
    assert lines[-2:] == ["| mask | 10240 |", "| tang | 2560 |"]


def test_render_only_rewrites_the_section_the_measurement_wrote(bench, tmp_path,
                                                                monkeypatch):
    results, page = tmp_path / "throughput.json", tmp_path / "performance.md"
    monkeypatch.setattr(bench, "measure", lambda args: measurement())
    bench.main(["--results", str(results), "--write-docs", str(page)])
    assert json.loads(results.read_text()) == measurement()
    written = page.read_text()
    assert written.startswith("# Throughput\n") and "<!-- throughput:start -->" in written
    monkeypatch.setattr(bench, "measure", None)
    page.write_text(written.replace("| mask | 10240 |", "| mask | 1 |"))
    bench.main(["--render-only", "--results", str(results), "--write-docs", str(page)])
    assert page.read_text() == written
