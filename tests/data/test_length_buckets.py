import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kdplug import testing
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.data.length_buckets import batches_by_length
from kdplug.data.length_buckets import LengthBuckets
from kdplug.data.word_encoder import WordEncoder
from kdplug.data.word_encoder import word_dataset
from kdplug.errors import KdplugError
from kdplug.terms import CosineHidden
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training import FusedAdamW
from kdplug.training.distiller import Distiller

SEQ = 32


def examples(lengths, hidden=3, heads=2):
    """Padded toy examples of the given lengths, with an `id` feature and
    teacher taps that name their example and position: `hidden/1[i, p] =
    100 * id + p`, `attention/1[i, h, q, k] = 100 * q + k`, `logits = id`."""
    n = len(lengths)
    mask = (np.arange(SEQ)[None, :] < np.asarray(lengths)[:, None]).astype("int32")
    ids = np.arange(n)
    positions = np.arange(SEQ, dtype="float32")
    x = {"token_ids": mask * 7, "segment_ids": mask * 0, "padding_mask": mask, "id": ids,
         "teacher/hidden/1": np.broadcast_to(
             (100 * ids[:, None] + positions)[..., None], (n, SEQ, hidden)).copy(),
         "teacher/attention/1": np.broadcast_to(
             100 * positions[:, None] + positions, (n, heads, SEQ, SEQ)).copy(),
         "teacher/logits": np.stack([ids, -ids], 1).astype("float32")}
    return tf.data.Dataset.from_tensor_slices((x, ids % 2)), n


def shuffled(lengths, seed=0):
    ds, n = examples(lengths)
    return ds.shuffle(n, seed=seed, reshuffle_each_iteration=True), n


def mixed_lengths(n=256, seed=0):
    return np.random.default_rng(seed).integers(3, SEQ + 1, size=n)


def padding_fraction(batches):
    """Padded positions / positions of the batches as they are fed."""
    real = total = 0
    for x, _ in batches:
        mask = x["padding_mask"].numpy()
        real, total = real + mask.sum(), total + mask.size
    return 1 - real / total


@pytest.mark.slow
def test_padding_by_hand():
    # 16 examples of 4 and 28 tokens, alternating; batches of 4.
    ds, n = examples([4, 28] * 8)
    plain = ds.batch(4)  # [4, 28, 4, 28] per batch: 256 real of 16 * 32
    assert padding_fraction(plain) == 0.5
    trimmed = LengthBuckets(window=1).batch(ds, 4, n)  # 28 -> 32: nothing to cut
    assert padding_fraction(trimmed) == 0.5
    buckets = list(LengthBuckets(window=4, multiple=8).batch(ds, 4, n))
    # one window of 16 sorted: two batches of 4s cut to 8, two of 28s to 32
    assert [x["token_ids"].shape[1] for x, _ in buckets] == [8, 8, 32, 32]
    assert padding_fraction(buckets) == pytest.approx(1 - 256 / (2 * 4 * 8 + 2 * 4 * 32))
    assert padding_fraction(buckets) == pytest.approx(0.2)


@pytest.mark.slow
def test_every_example_once_per_epoch_reshuffled_and_seeded():
    lengths = mixed_lengths(70)
    ds, n = shuffled(lengths, seed=1)
    buckets = LengthBuckets(window=3, multiple=8)
    batched = buckets.batch(ds, 8, n, shuffle=True, seed=1)
    assert int(batched.cardinality()) == 9  # ceil(70 / 8), as unbucketed
    epochs = [np.concatenate([x["id"].numpy() for x, _ in batched]) for _ in range(2)]
    for order in epochs:
        np.testing.assert_array_equal(np.sort(order), np.arange(n))
    assert not np.array_equal(*epochs)  # reshuffled every epoch
    again = buckets.batch(shuffled(lengths, seed=1)[0], 8, n, shuffle=True, seed=1)
    np.testing.assert_array_equal(
        np.concatenate([x["id"].numpy() for x, _ in again]), epochs[0])  # seeded
    dropped = buckets.batch(ds, 8, n, shuffle=True, seed=1, drop_remainder=True)
    sizes = [len(y) for _, y in dropped]
    assert int(dropped.cardinality()) == len(sizes) == 8 and set(sizes) == {8}


def test_batches_are_length_homogeneous_and_cut_to_multiples():
    lengths = mixed_lengths(256)
    ds, n = shuffled(lengths)
    plain = padding_fraction(ds.batch(16))
    assert plain == pytest.approx(1 - lengths.mean() / SEQ)
    assert plain == pytest.approx(0.4338, abs=1e-4)
    trimmed = padding_fraction(LengthBuckets(window=1).batch(ds, 16, n, shuffle=True))
    bucketed = LengthBuckets(window=8, multiple=8).batch(ds, 16, n, shuffle=True)
    fraction = padding_fraction(bucketed)
    # measured: 0.434 padded, 0.434 trimmed (16 random lengths: the longest
    # rounds up to 32), 0.212 in buckets (half of it the rounding to 8)
    assert fraction < trimmed <= plain
    assert fraction < plain / 2
    for x, _ in bucketed:
        width = x["token_ids"].shape[1]
        longest = x["padding_mask"].numpy().sum(1).max()
        assert width % 8 == 0 and longest <= width < longest + 8
        np.testing.assert_array_equal(x["padding_mask"].numpy().sum(1),
                                      lengths[x["id"].numpy()])  # nothing real cut


def test_teacher_features_are_cut_with_the_tokens():
    ds, n = shuffled(mixed_lengths(64))
    for x, _ in LengthBuckets(window=2, multiple=4).batch(ds, 8, n, shuffle=True):
        width, ids = x["token_ids"].shape[1], x["id"].numpy()
        assert x["teacher/hidden/1"].shape == (len(ids), width, 3)
        assert x["teacher/attention/1"].shape == (len(ids), 2, width, width)
        positions = np.arange(width, dtype="float32")
        np.testing.assert_array_equal(x["teacher/hidden/1"][:, :, 0],
                                      100 * ids[:, None] + positions)
        np.testing.assert_array_equal(x["teacher/attention/1"][:, 1],
                                      np.broadcast_to(100 * positions[:, None] + positions,
                                                      (len(ids), width, width)))
        np.testing.assert_array_equal(x["teacher/logits"][:, 0], ids)  # per example


def test_window_1_keeps_the_plain_batches_only_trimmed():
    # (two datasets: iterating one shuffled dataset twice gives two epochs)
    plain = [x for x, _ in shuffled(mixed_lengths(40), seed=5)[0].batch(8)]
    ds, n = shuffled(mixed_lengths(40), seed=5)
    trimmed = [x for x, _ in LengthBuckets(window=1).batch(ds, 8, n, shuffle=True)]
    for a, b in zip(plain, trimmed):
        np.testing.assert_array_equal(a["id"], b["id"])
        width = b["token_ids"].shape[1]
        np.testing.assert_array_equal(a["padding_mask"][:, :width], b["padding_mask"])
        assert a["padding_mask"].numpy()[:, width:].sum() == 0


def test_rejects_bad_settings():
    for bad in (0, 1.5, True):
        with pytest.raises(KdplugError, match="integer >= 1"):
            LengthBuckets(window=bad)
    with pytest.raises(KdplugError, match="multiple"):
        LengthBuckets(multiple=0)


def fit_steps(ds, init):
    """Losses of a tiny student's steps on `ds` (logits and hidden-state terms
    read from the batch, as with the teacher-output cache)."""
    keras.utils.set_random_seed(3)
    student = testing.tiny_bert_classifier(num_layers=1, seed=1)
    student.set_weights(init)
    distiller = Distiller(student, None, [SoftTargetCrossEntropy(2.0, weight=0.5),
                                          CosineHidden([("hidden/1", "hidden/1")])])
    distiller.compile(optimizer=FusedAdamW(1e-2, weight_decay=0.0), jit_compile=False,
                      run_eagerly=True)
    record = testing.StepLosses()
    distiller.fit(ds, epochs=1, verbose=0, callbacks=[record], shuffle=False)
    return np.array(record.losses), student.get_weights()


@pytest.mark.slow
def test_training_on_trimmed_batches_equals_training_on_padded_ones():
    x, y = testing.toy_arrays(num_examples=40, sequence_length=SEQ, seed=2)
    x["padding_mask"][:, 20:] = 0
    x["token_ids"] *= x["padding_mask"]
    teacher = testing.tiny_bert_classifier(num_layers=1, seed=0)
    taps = teacher.taps(x, ["logits", "hidden/1"], training=False)
    x.update({f"teacher/{k}": np.asarray(v) for k, v in taps.items()})
    ds = lambda: tf.data.Dataset.from_tensor_slices((x, y)).shuffle(40, seed=0)  # noqa: E731
    init = testing.tiny_bert_classifier(num_layers=1, seed=1).get_weights()
    padded, w_padded = fit_steps(ds().batch(8), init)
    trimmed, w_trimmed = fit_steps(
        LengthBuckets(window=1).batch(ds(), 8, 40, shuffle=True), init)
    assert len(padded) == 5 and padded[-1] != padded[0]
    np.testing.assert_allclose(trimmed, padded, rtol=0, atol=2e-5)
    for a, b in zip(w_trimmed, w_padded):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-5)


def toy_examples(n=48):
    texts, labels = testing.toy_sentences(n, seed=1)
    pairs = [t.split()[0] + " " + t for t in texts[::-1]]
    return Examples(texts, np.asarray(labels, "int32"), pairs, "toy")


@pytest.mark.slow
def test_text_encoder_and_word_dataset_batches():
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=testing.toy_vocabulary())
    encoder = TextEncoder(tokenizer, 40, pair_inputs=True)
    data = toy_examples()
    buckets = LengthBuckets(window=2, multiple=4)
    padded = next(iter(encoder.dataset(data, 48)))[0]  # one batch: every example
    words = WordEncoder.from_examples(data, 24)
    ds = word_dataset(encoder, words, data, 8, shuffle=True, seed=0,
                      length_buckets=buckets)
    assert int(ds.cardinality()) == 6
    seen = []
    for x, _ in ds:
        for mask_key, id_key in (("padding_mask", "token_ids"),
                                 ("padding_mask_b", "token_ids_b"),
                                 ("word_padding_mask", "word_ids"),
                                 ("word_padding_mask_b", "word_ids_b")):
            width, longest = x[id_key].shape[1], x[mask_key].numpy().sum(1).max()
            assert x[mask_key].shape[1] == width and width % 4 == 0
            assert longest <= width < longest + 4
        seen += [tuple(r[r > 0]) for r in x["token_ids"].numpy()]
    assert sorted(seen) == sorted(tuple(r[r > 0]) for r in padded["token_ids"].numpy())
    val = encoder.dataset(data, 16, length_buckets=buckets)  # evaluation: not shuffled
    assert [x["token_ids"].shape[1] for x, _ in val] == [
        x["token_ids"].shape[1] for x, _ in val]  # the same every time


@pytest.mark.slow
def test_kdplug_run_with_length_buckets_streams_the_cache_and_learns(tmp_path, kdplug_log):
    from kdplug.config import load_config
    from kdplug.run.experiment import Experiment
    from kdplug.testing.toy_config import write_toy_config

    path = write_toy_config(tmp_path, {"name": "kd"}, training={"length_buckets": True},
                            cache=True, export=False)
    config = load_config(path)
    assert (config.training.length_buckets.window,
            config.training.length_buckets.multiple) == (16, 8)
    report = Experiment(config).run()
    assert any(m.startswith("length buckets:") for m in kdplug_log())
    assert report["teacher_output_cache"]["key"]  # batches streamed from the cache
    loss = report["history"]["distill"]["loss"]
    assert loss[-1] < loss[0]
    # The toy teacher answers one class (0.53 or 0.47 of the 36 test
    # sentences, by where its fine-tuning ends), and so does the student:
    # its accuracy says which class, not whether it learned.
    teacher = report["teacher"]["accuracy"]
    assert report["student"]["accuracy"] in (pytest.approx(teacher),
                                             pytest.approx(1 - teacher))


def test_batches_by_length_sorts_stably_and_covers_every_row_once():
    lengths = [5, 2, 7, 2, 1, 5, 3]
    mask = np.array([[1] * n + [0] * (8 - n) for n in lengths])
    batches = batches_by_length(mask, 3)
    assert [list(b) for b in batches] == [[4, 1, 3], [6, 0, 5], [2]]
    assert batches_by_length(mask[:0], 3) == []
