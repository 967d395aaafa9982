import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import testing
from kdplug.errors import KdplugError
from kdplug.teacher.pipeline import TeacherPipeline
from kdplug.teacher.pipeline import best_inference_dtype
from kdplug.teacher.pipeline import trim_to_longest
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training.distribution import mirrored_strategy


@pytest.fixture(scope="module")
def teacher():
    model = testing.tiny_bert_classifier(num_layers=2, seed=1)
    model.trainable = False
    return model


def dataset(sequence_length=32):
    # lengths 4..12 padded to 32: trimming cuts every batch to 8 or 16
    x, y = testing.toy_arrays(num_examples=32, sequence_length=sequence_length)
    lengths = x["padding_mask"].sum(1)
    keep = lengths <= 12
    x = {k: v[keep] for k, v in x.items()}
    return tf.data.Dataset.from_tensor_slices((x, y[keep])).batch(8)


def test_trim_to_longest():
    mask = np.zeros((2, 32), "int32")
    mask[0, :5], mask[1, :9] = 1, 1
    inputs = {"token_ids": mask * 7, "padding_mask": mask, "other": np.ones((2, 3))}
    trimmed = trim_to_longest(inputs, multiple=8)
    assert trimmed["token_ids"].shape == (2, 16) and trimmed["padding_mask"].shape == (2, 16)
    assert trimmed["other"].shape == (2, 3)  # not a (batch, seq) input
    assert trim_to_longest(inputs, multiple=64)["token_ids"].shape == (2, 32)


@pytest.mark.slow
def test_float32_outputs_equal_the_teacher_and_trimming_changes_nothing(teacher):
    names = ["cls/1", "logits"]
    pipeline = TeacherPipeline(teacher, names, dtype="float32")
    assert pipeline.trim_padding and pipeline.jit_compile  # float32: XLA by default
    untrimmed = TeacherPipeline(teacher, names, dtype="float32", trim_padding=False,
                                jit_compile=False)
    # one batch: each shape is an XLA compilation (seconds on a CPU)
    (x, y), (x0, y0) = next(zip(pipeline(dataset()), dataset()))
    assert trim_to_longest(dict(x0), 8)["token_ids"].shape[1] == 16  # cut from 32
    ref = teacher.taps(x0, names)
    padded = untrimmed.outputs(x0)
    for name in names:
        np.testing.assert_allclose(x[f"teacher/{name}"], ref[name], atol=1e-5)
        np.testing.assert_allclose(padded[name], x[f"teacher/{name}"], atol=1e-5)
    np.testing.assert_array_equal(x["token_ids"], x0["token_ids"])  # student's input kept
    np.testing.assert_array_equal(y, y0)


@pytest.mark.slow
def test_length_chunks_give_the_batch_outputs_in_its_order(teacher):
    """Batches of 8, 5, 3 and 1 rows, lengths 3..31 shuffled, through one
    pipeline per chunk count (each traced once for every batch size)."""
    names = ["cls/1", "logits"]
    # without XLA, which would compile every chunk's shape
    pipelines = {chunks: TeacherPipeline(teacher, names, dtype="float32", jit_compile=False,
                                         length_chunks=chunks) for chunks in (1, 2, 4)}
    for batch in (8, 5, 3, 1):
        x, _ = testing.toy_arrays(num_examples=batch, sequence_length=32, seed=batch)
        x["padding_mask"][:] = 0
        lengths = np.linspace(3, 31, batch).astype(int)
        for i, length in enumerate(np.random.default_rng(batch).permutation(lengths)):
            x["padding_mask"][i, :length] = 1
        ref = teacher.taps(x, names)
        for chunks, pipeline in pipelines.items():
            seen = []
            forward = pipeline._forward
            pipeline._forward = lambda inputs: (seen.append(inputs["token_ids"].shape),
                                                forward(inputs))[1]
            out = pipeline.outputs(x)
            pipeline._forward = forward
            for name in names:
                np.testing.assert_allclose(out[name], ref[name], atol=1e-5)
            assert len(seen) == chunks, (batch, chunks)
            assert sum(shape[0] for shape in seen) == max(batch, chunks)  # empty: one row
            if chunks > 1 and batch >= chunks:  # the shortest examples' chunk is cut shorter
                assert seen[0][1] < seen[-1][1], (batch, chunks)


@pytest.mark.slow
def test_sequence_taps_are_not_trimmed_and_bfloat16_is_close(teacher):
    pipeline = TeacherPipeline(teacher, ["hidden/1", "logits"], dtype="bfloat16")
    assert not pipeline.trim_padding  # a padded position of hidden/1 is read
    assert not pipeline.jit_compile  # no GPU in the tests: oneDNN, not XLA
    assert all(w.dtype == "bfloat16" for w in pipeline.teacher.weights)
    assert all(w.dtype == "float32" for w in teacher.weights)  # original untouched
    x, _ = next(iter(pipeline(dataset())))
    assert x["teacher/hidden/1"].shape == (8, 32, 16)
    assert x["teacher/logits"].dtype == tf.float32
    ref = teacher.taps({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")},
                       ["hidden/1", "logits"])
    np.testing.assert_allclose(x["teacher/logits"], ref["logits"], atol=0.02)
    np.testing.assert_allclose(x["teacher/hidden/1"], ref["hidden/1"], atol=0.1)


def test_auto_dtype_follows_the_hardware(tmp_path, monkeypatch):
    monkeypatch.setattr("kdplug.teacher.pipeline.has_gpu", lambda: False)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16 amx_tile\n")
    assert best_inference_dtype(str(cpuinfo)) == "bfloat16"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n")
    assert best_inference_dtype(str(cpuinfo)) == "float32"  # bf16 would be emulated
    assert best_inference_dtype(str(tmp_path / "missing")) == "float32"
    monkeypatch.setattr("kdplug.teacher.pipeline.has_gpu", lambda: True)
    assert best_inference_dtype(str(cpuinfo)) == "bfloat16"


def kd_terms():
    return [SoftTargetCrossEntropy(2.0, weight=0.5), HardLabelCrossEntropy(0.5)]


@pytest.mark.slow
def test_training_with_the_pipeline_equals_the_online_teacher(teacher):
    histories = []
    for pipelined in (False, True):
        keras.utils.set_random_seed(0)
        student = testing.tiny_bert_classifier(num_layers=1, seed=2)
        distiller = Distiller(student, teacher, kd_terms())
        distiller.compile(optimizer=keras.optimizers.SGD(0.1), jit_compile=False)
        train = dataset()
        if pipelined:
            train = TeacherPipeline(teacher, distiller.teacher_tap_names,
                                    dtype="float32")(train)
        histories.append(distiller.fit(train, epochs=3, verbose=0, shuffle=False).history)
    for key in ("loss", "soft_ce", "hard_ce"):
        np.testing.assert_allclose(histories[1][key], histories[0][key], rtol=1e-5)
    assert histories[1]["loss"][-1] < histories[1]["loss"][0]


def test_errors(teacher, cpu_devices):
    with pytest.raises(KdplugError, match="dtype must be one of"):
        TeacherPipeline(teacher, ["logits"], dtype="int8")
    with pytest.raises(KdplugError, match="length_chunks must be an integer >= 1, got 0"):
        TeacherPipeline(teacher, ["logits"], length_chunks=0)
    with pytest.raises(KdplugError, match="no teacher taps"):
        TeacherPipeline(teacher, [])
    strategy = mirrored_strategy(cpu_devices,
                                 cross_device_ops=tf.distribute.ReductionToOneDevice())
    with strategy.scope(), pytest.raises(KdplugError, match="outside `strategy.scope"):
        TeacherPipeline(teacher, ["logits"])
    with pytest.raises(KdplugError, match="needs\\s+taps"):
        TeacherPipeline(keras.Sequential([keras.layers.Dense(2)]), ["logits"])
    # A batch that already carries the taps (the cache) passes through.
    pipeline = TeacherPipeline(teacher, ["logits"])
    cached = dataset().map(lambda x, y: ({**x, "teacher/logits": tf.zeros((8, 2))}, y))
    assert pipeline(cached) is cached


# `kdplug run` with `teacher.pipeline` (bfloat16, under MirroredStrategy, XLA and
# the custom loop): tests/training/test_strategy_parity.py::
# test_kdplug_run_mirrored_with_xla; the pipeline equals the online teacher in
# training: test_training_with_the_pipeline_equals_the_online_teacher above.
