"""Teacher-output cache: keys, hits, resumption, and training parity."""

import json
import os

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kdplug import storage
from kdplug import testing
from kdplug.cli import main
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.data.length_buckets import LengthBuckets
from kdplug.data.transfer_set import AugmentStep
from kdplug.data.transfer_set import build_transfer_set
from kdplug.errors import KdplugError
from kdplug.teacher import cache_admin as cache_mod
from kdplug.teacher.output_cache import TeacherCache
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training import FusedAdamW
from kdplug.training.distiller import Distiller
from kdplug_plugins.augmenters.mask import MaskAugmenter

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("a the movie film plot actor story was is great good bad dull "
         "boring fun funny long short and but not very it this").split()
VOCAB = SPECIAL + WORDS + [".", ","]
SEQ = 12
# One unit in the last place of float16 (10 mantissa bits), relative.
FLOAT16_ULP = 2.0 ** -10


def eager_cache(*args, **kwargs):
    """A cache that runs the tiny teacher eagerly (no tracing: fast tests)."""
    kwargs.setdefault("run_eagerly", True)
    return TeacherCache(*args, **kwargs)


def make_examples(n=40, seed=0):
    rng = np.random.default_rng(seed)
    texts = [
        " ".join(rng.choice(WORDS, size=rng.integers(3, 9))) + "."
        for _ in range(n)
    ]
    return Examples(texts, rng.integers(0, 2, size=n).astype("int32"), source="toy")


def make_encoder(sequence_length=SEQ, special_tokens_in_strings=True):
    # special_tokens_in_strings: "[MASK]" in augmented text is the mask token.
    tokenizer = keras_hub.tokenizers.BertTokenizer(
        vocabulary=VOCAB, lowercase=True,
        special_tokens_in_strings=special_tokens_in_strings)
    return TextEncoder(tokenizer, sequence_length)


def make_teacher(seed=0):
    return testing.tiny_bert_classifier(
        seed=seed, num_layers=2, vocabulary_size=len(VOCAB))


@pytest.fixture(scope="module")
def teacher():
    return make_teacher()


@pytest.fixture(scope="module")
def encoder():
    return make_encoder()


@pytest.fixture(scope="module")
def examples():
    return make_examples()


def online_taps(teacher, encoder, examples, taps):
    out = {t: [] for t in taps}
    for x, _ in encoder.dataset(examples, 16):
        result = teacher.taps(x, taps, training=False)
        for t in taps:
            out[t].append(keras.ops.convert_to_numpy(result[t]))
    return {t: np.concatenate(v) for t, v in out.items()}


@pytest.mark.slow
def test_miss_then_hit_and_values_match_the_teacher(tmp_path, teacher, encoder,
                                                     examples):
    taps = ["logits", "hidden/1", "attention/2"]
    # The default path: tf.data tokenisation and a traced forward pass.
    first = TeacherCache(teacher, encoder, examples, taps, dtype="float32",
                         shard_size=16, batch_size=12, root=str(tmp_path))
    info = first.precompute()
    assert info["cached"] is False and info["computed"] == [0, 1, 2]
    assert info["bytes"] == first.disk_size() > 0
    second = eager_cache(teacher, encoder, examples, taps, dtype="float32",
                         shard_size=16, batch_size=12, root=str(tmp_path))
    assert second.key == first.key
    again = second.precompute()
    assert again["cached"] is True and again["computed"] == []
    loaded = second.load()
    assert sorted(loaded) == ["teacher/attention/2", "teacher/hidden/1",
                              "teacher/logits"]
    expected = online_taps(teacher, encoder, examples, taps)
    assert loaded["teacher/logits"].shape == (40, 2)
    assert loaded["teacher/hidden/1"].shape == (40, SEQ, 16)
    assert loaded["teacher/attention/2"].shape == (40, 2, SEQ, SEQ)
    for tap in taps:
        assert loaded[f"teacher/{tap}"].dtype == np.float32
        np.testing.assert_allclose(loaded[f"teacher/{tap}"], expected[tap],
                                   rtol=0, atol=1e-5)
    # Without XLA (`training.jit_compile: false`): the same entry, the same values.
    plain = TeacherCache(teacher, encoder, examples, taps, dtype="float32",
                         shard_size=16, batch_size=12, root=str(tmp_path / "no-xla"),
                         jit_compile=False)
    assert plain.key == first.key
    for name, values in plain.get().items():
        np.testing.assert_allclose(values, loaded[name], rtol=0, atol=1e-5)
    # Shards of 16, 16 and 8 rows in batches of 12, 4, 12, 4 and 8: one trace.
    assert plain._forward.function.experimental_get_tracing_count() == 1


def test_float16_storage_is_half_the_size_and_close(tmp_path, teacher, encoder,
                                                    examples):
    taps = ["logits", "hidden/2"]
    c16 = eager_cache(teacher, encoder, examples, taps, root=str(tmp_path))
    c32 = eager_cache(teacher, encoder, examples, taps, dtype="float32",
                       root=str(tmp_path))
    assert c16.dtype == "float16" and c16.key != c32.key
    l16, l32 = c16.get(), c32.get()
    payload16 = sum(v.size * 2 for v in l16.values())
    assert c16.disk_size() < c32.disk_size() < 2 * payload16 + 8192
    for k in l16:
        np.testing.assert_allclose(l16[k], l32[k], rtol=1e-3, atol=1e-3)
        assert not np.array_equal(l16[k], l32[k])  # it really was rounded


def test_key_changes_with_every_input(teacher, encoder, examples, tmp_path):
    def key(t=teacher, e=encoder, x=examples, taps=("logits",), **kw):
        return eager_cache(t, e, x, taps, root=str(tmp_path), **kw).key

    base = key()
    # A teacher rebuilt from the same seed has equal weights: same key, even
    # with other (auto-numbered) layer names and other trainable flags.
    twin = make_teacher()
    twin.trainable = False
    assert key(t=twin) == base
    changed = make_teacher()
    w = changed.classifier.kernel
    w.assign(w.numpy() + 1e-3)
    assert key(t=changed) != base

    texts = list(examples.texts)
    texts[3] = texts[3] + " fun"
    assert key(x=Examples(texts, examples.labels)) != base
    labels = examples.labels.copy()
    labels[0] = 1 - labels[0]
    assert key(x=Examples(examples.texts, labels)) != base
    assert key(x=examples.take(39)) != base

    assert key(e=make_encoder(SEQ + 4)) != base
    cased = TextEncoder(keras_hub.tokenizers.BertTokenizer(
        vocabulary=VOCAB, lowercase=False, special_tokens_in_strings=True), SEQ)
    assert key(e=cased) != base
    assert key(e=make_encoder(SEQ, special_tokens_in_strings=False)) != base
    assert key(e=make_encoder(SEQ)) == base

    assert key(taps=["logits", "hidden/1"]) != base
    assert key(taps=["logits", "logits"]) == base
    assert key(dtype="float32") != base
    assert key(shard_size=7) != base


def test_invalidation_recomputes_under_a_new_entry(tmp_path, teacher, encoder,
                                                   examples):
    a = eager_cache(teacher, encoder, examples, root=str(tmp_path / "outputs"))
    assert a.precompute()["cached"] is False
    b = eager_cache(teacher, make_encoder(SEQ + 2), examples, root=str(tmp_path / "outputs"))
    assert b.precompute()["cached"] is False
    assert a.precompute()["cached"] is True
    assert {e["key"] for e in cache_mod.list_entries(str(tmp_path))} == {a.key, b.key}


class Interrupt(Exception):
    pass


def test_resume_after_interrupted_precompute(tmp_path, teacher, encoder, examples):
    root = str(tmp_path / "outputs")
    cache = eager_cache(teacher, encoder, examples, ["logits", "cls/2"],
                         shard_size=8, root=root)
    assert cache.num_shards == 5

    def stop_after_two(index, total):
        assert total == 5
        if index == 1:
            raise Interrupt

    with pytest.raises(Interrupt):
        cache.precompute(on_shard=stop_after_two)
    files = sorted(os.listdir(cache.path))
    assert files == [".kdplug-entry", "info.json", "shard-00000.npz", "shard-00001.npz"]
    assert not cache.is_complete()
    with pytest.raises(KdplugError, match="not complete"):
        cache.load()
    [entry] = cache_mod.list_entries(str(tmp_path))
    assert (entry["complete"], entry["shards_done"], entry["num_shards"]) == (
        False, 2, 5)
    assert "partial 2/5" in cache_mod.format_entries([entry])

    # A write killed half-way leaves only a temporary (from a dead process)...
    stale = os.path.join(cache.path, ".shard-00002.npz.tmp.999999999.abcd")
    with open(stale, "wb") as f:
        f.write(b"PK\x03\x04 truncated")
    # ...and a shard damaged on disk is recomputed rather than trusted.
    with open(cache.shard_path(1), "r+b") as f:
        f.truncate(40)

    seen, forwarded = [], []
    resumed = eager_cache(teacher, encoder, examples, ["logits", "cls/2"],
                          shard_size=8, batch_size=5, root=root)
    run = resumed._taps
    resumed._taps = lambda x: forwarded.append(len(x["token_ids"])) or run(x)
    info = resumed.precompute(on_shard=lambda i, n: seen.append(i))
    assert info["computed"] == [1, 2, 3, 4] == seen
    assert sum(forwarded) == 32  # the teacher saw only the missing examples
    assert info["reused"] == [0]
    assert not os.path.exists(stale)
    manifest = json.load(open(os.path.join(cache.path, "manifest.json")))
    assert [s["start"] for s in manifest["shards"]] == [0, 8, 16, 24, 32]
    assert manifest["shards"][-1]["stop"] == 40
    assert manifest["tap_shapes"] == {"logits": [2], "cls/2": [16]}

    # The resumed run batches by 5, the fresh one by the default: the teacher's
    # float32 sums round differently per batch shape, and a float16 cache can
    # then land one unit in the last place apart (seen in CI: 9.5e-7 at 1.2e-3).
    fresh = eager_cache(teacher, encoder, examples, ["logits", "cls/2"],
                        shard_size=8, root=str(tmp_path / "fresh"))
    full, got = fresh.get(), resumed.load()
    assert sorted(full) == sorted(got)
    for k in full:
        np.testing.assert_allclose(got[k], full[k], rtol=FLOAT16_ULP, atol=0)

    # A shard lost after completion: the entry is incomplete, and only that
    # shard is recomputed.
    os.remove(resumed.shard_path(3))
    assert not resumed.is_complete()
    again = resumed.precompute()
    assert again["computed"] == [3] and again["reused"] == [0, 1, 2, 4]
    np.testing.assert_allclose(resumed.load()["teacher/logits"],
                               full["teacher/logits"], rtol=FLOAT16_ULP, atol=0)


def test_list_remove_and_errors(tmp_path, teacher, encoder, examples,
                                monkeypatch):
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path))
    assert cache_mod.list_entries() == []
    assert cache_mod.format_entries([]) == f"no cache entries in {tmp_path}"
    a = eager_cache(teacher, encoder, examples)
    assert a.path == os.path.join(str(tmp_path), "outputs", a.key)
    a.precompute()
    b = eager_cache(teacher, encoder, examples.take(10), ["logits", "pooled"])
    b.precompute()
    entries = cache_mod.list_entries()
    assert [e["complete"] for e in entries] == [True, True]
    by_key = {e["key"]: e for e in entries}
    assert by_key[b.key]["num_examples"] == 10
    assert by_key[b.key]["taps"] == ["logits", "pooled"]
    assert by_key[a.key]["bytes"] == a.disk_size()
    table = cache_mod.format_entries(entries)
    assert a.key in table and b.key in table and "2 entries" in table

    with pytest.raises(KdplugError, match="no cache entry"):
        cache_mod.remove("0" * 16 if a.key[0] != "0" else "f" * 16)
    with pytest.raises(KdplugError, match="not a cache key"):
        cache_mod.remove("../etc")
    removed = cache_mod.remove(a.key[:6])
    assert removed["key"] == a.key and not os.path.exists(a.path)
    removed, foreign = cache_mod.remove_all()
    assert [e["key"] for e in removed] == [b.key] and foreign == []
    assert cache_mod.list_entries() == []


def _damage(path, how):
    if how == "truncated":
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    else:  # one flipped bit in the middle of the data: same size, same zip
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0x01]))


@pytest.mark.parametrize("how", ["truncated", "bit-flipped"])
def test_a_damaged_shard_of_a_complete_entry_is_recomputed(
        how, tmp_path, teacher, encoder, examples, kdplug_log):
    cache = eager_cache(teacher, encoder, examples, ["logits", "cls/2"],
                        shard_size=16, root=str(tmp_path))
    good = cache.get()
    manifest = json.load(open(os.path.join(cache.path, "manifest.json")))
    assert all(len(s["sha256"]) == 64 for s in manifest["shards"])
    _damage(cache.shard_path(1), how)
    seen = len(kdplug_log())

    again = eager_cache(teacher, encoder, examples, ["logits", "cls/2"],
                        shard_size=16, root=str(tmp_path))
    got = again.get()
    for key in good:
        np.testing.assert_array_equal(got[key], good[key])
    warnings = [m for m in kdplug_log()[seen:] if "damaged" in m]
    assert len(warnings) == 1 and "shard-00001.npz" in warnings[0]
    seen = len(kdplug_log())
    assert again.is_complete() and again.get()["teacher/logits"].shape == (40, 2)
    assert [m for m in kdplug_log()[seen:] if "damaged" in m] == []  # healed for good


def test_foreign_symlinked_and_legacy_entries(tmp_path, teacher, encoder, examples,
                                              monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(root))
    ours = eager_cache(teacher, encoder, examples)
    ours.precompute()
    foreign = root / "outputs" / "0123456789abcdef"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("not kdplug's")
    (root / "outputs" / "notes.txt").write_text("not kdplug's either")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    (root / "teachers").mkdir()
    os.symlink(target, root / "teachers" / "fedcba9876543210")
    # a kdplug 0.1 transfer set: a <key>.json file with its content
    (root / "transfer").mkdir()
    legacy = root / "transfer" / "00112233aabbccdd.json"
    legacy.write_text(json.dumps({"original": 3, "texts": ["a", "b"], "pairs": None}))
    # a copied marker does not make a folder ours
    copied = root / "outputs" / "aaaaaaaaaaaaaaaa"
    copied.mkdir()
    (copied / ".kdplug-entry").write_text(open(
        os.path.join(ours.path, ".kdplug-entry")).read())

    by_key = {e["key"]: e for e in cache_mod.list_entries()}
    assert by_key[ours.key]["owned"] and by_key["00112233aabbccdd.json"]["owned"]
    assert "0.1" in by_key["00112233aabbccdd.json"]["detail"]
    for key in ("0123456789abcdef", "notes.txt", "aaaaaaaaaaaaaaaa"):
        assert by_key[key]["status"] == "foreign", key
    assert by_key["fedcba9876543210"]["status"] == "foreign (symlink)"
    table = cache_mod.format_entries(list(by_key.values()))
    assert "2 entries" in table and "4 foreign item(s)" in table
    with pytest.raises(KdplugError, match="not created by kdplug"):
        cache_mod.remove("fedcba98")

    removed, left = cache_mod.remove_all()
    assert {e["key"] for e in removed} == {ours.key, "00112233aabbccdd.json"}
    assert len(left) == 4
    assert (foreign / "thesis.tex").read_text() == "not kdplug's"
    assert (target / "keep.txt").is_file() and os.path.islink(
        root / "teachers" / "fedcba9876543210")


@pytest.mark.parametrize("value", ["", "  ", "relative/cache"])
def test_cache_rm_all_never_touches_the_working_directory(value, tmp_path, monkeypatch,
                                                         capsys):
    home = tmp_path / "home"
    cwd = tmp_path / "work"
    (cwd / "outputs" / "0123456789abcdef").mkdir(parents=True)
    (cwd / "outputs" / "0123456789abcdef" / "data.txt").write_text("mine")
    (cwd / "relative" / "cache" / "outputs").mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KDPLUG_CACHE_DIR", value)
    code = main(["cache", "rm", "--all"])
    err = capsys.readouterr().err
    if value.strip():
        assert code == 2 and "KDPLUG_CACHE_DIR='relative/cache' is a relative path" in err
    else:  # empty means unset: the default under $HOME
        assert code == 0 and cache_mod.cache_root() == str(home / ".cache" / "kdplug")
    assert (cwd / "outputs" / "0123456789abcdef" / "data.txt").read_text() == "mine"


def test_warns_when_the_tokenizer_would_split_mask(teacher, tmp_path):
    data = Examples(["a [MASK] film .", "the plot"], np.array([-1, 0]))
    with pytest.warns(UserWarning, match="special_tokens_in_strings=True"):
        eager_cache(teacher, make_encoder(special_tokens_in_strings=False), data,
                    root=str(tmp_path))
    ids = make_encoder()(tf.constant(["a [MASK] film"]))["token_ids"][0, :5]
    assert ids.numpy().tolist() == [2, VOCAB.index("a"), 4, VOCAB.index("film"), 3]


def test_bad_arguments(teacher, encoder, examples, tmp_path):
    with pytest.raises(KdplugError, match="no tap"):
        eager_cache(teacher, encoder, examples, ["hidden/9"], root=str(tmp_path))
    with pytest.raises(KdplugError, match="float16 or float32"):
        eager_cache(teacher, encoder, examples, dtype="int8", root=str(tmp_path))
    with pytest.raises(KdplugError, match="no examples"):
        eager_cache(teacher, encoder, examples.take(0), root=str(tmp_path))


def fit_losses(teacher, encoder, examples, extra, student_weights):
    keras.utils.set_random_seed(7)
    student = testing.tiny_bert_classifier(
        seed=1, num_layers=1, vocabulary_size=len(VOCAB))
    student.set_weights(student_weights)
    distiller = Distiller(
        student, None if extra else teacher,
        terms=[SoftTargetCrossEntropy(temperature=2.0, weight=0.7),
               HardLabelCrossEntropy(weight=0.3)])
    distiller.compile(optimizer=FusedAdamW(1e-2, weight_decay=0.0), jit_compile=False,
                      run_eagerly=True)
    record = testing.StepLosses()
    ds = encoder.dataset(examples, 8, shuffle=True, seed=3, extra=extra)
    distiller.fit(ds, epochs=1, verbose=0, callbacks=[record])
    return np.array(record.losses), student.get_weights()


@pytest.mark.slow
def test_training_with_cached_outputs_matches_the_online_teacher(
        tmp_path, teacher, encoder, examples):
    # The real flow: an augmented transfer set (new examples unlabelled).
    data = build_transfer_set(
        examples.take(20),
        [AugmentStep(MaskAugmenter(MaskAugmenter.Config(p_mask=0.3)), n=1)])
    assert len(data) == 36 and data.labels.tolist().count(-1) == 16
    init = testing.tiny_bert_classifier(
        seed=1, num_layers=1, vocabulary_size=len(VOCAB)).get_weights()

    online, w_online = fit_losses(teacher, encoder, data, None, init)
    extra32 = eager_cache(teacher, encoder, data, dtype="float32",
                          root=str(tmp_path)).get()
    cached, w_cached = fit_losses(teacher, encoder, data, extra32, init)
    extra16 = eager_cache(teacher, encoder, data, root=str(tmp_path)).get()
    half, _ = fit_losses(teacher, encoder, data, extra16, init)

    assert len(online) == 5 and np.all(np.isfinite(online))
    assert max(np.abs(a - b).max() for a, b in zip(w_online, init)) > 1e-3
    np.testing.assert_allclose(cached, online, rtol=0, atol=1e-5)
    for a, b in zip(w_cached, w_online):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    np.testing.assert_allclose(half, online, rtol=0, atol=2e-3)


def rows_by_text(batches, examples, encoder):
    """`{first token ids: (label, teacher taps)}` of every streamed example."""
    out = {}
    for x, y in batches:
        for i in range(len(y)):
            ids = tuple(x["token_ids"][i].numpy().tolist())
            out[ids] = (int(y[i]), {k: x[k][i].numpy() for k in x if k.startswith("teacher/")})
    return out


@pytest.mark.slow
def test_stream_reads_every_example_once_with_its_outputs(tmp_path, teacher, encoder,
                                                          examples):
    taps = ["logits", "hidden/1", "attention/2"]
    cache = eager_cache(teacher, encoder, examples, taps, shard_size=16,
                        root=str(tmp_path))
    cache.precompute()
    loaded = cache.load()
    # Stored in a seeded random order (each shard a random sample), which
    # an unshuffled stream keeps: the same batches as the examples and the
    # loaded outputs taken in that order, as float32.
    assert sorted(cache.order.tolist()) == list(range(len(examples)))
    assert not np.array_equal(cache.order, np.arange(len(examples)))
    plain = list(encoder.dataset(examples.select(cache.order), 8,
                                 extra={k: v[cache.order] for k, v in loaded.items()}))
    streamed = list(cache.stream(8))
    assert len(streamed) == len(plain) == 5
    for (xs, ys), (xp, yp) in zip(streamed, plain):
        assert sorted(xs) == sorted(xp)
        np.testing.assert_array_equal(ys, yp)
        for key in xp:
            assert xs[key].dtype == xp[key].dtype
            np.testing.assert_array_equal(xs[key], xp[key])
    # Shuffled: every example exactly once per epoch, with its own outputs,
    # in an order that changes between epochs and repeats with the seed.
    ds = cache.stream(8, shuffle=True, seed=3)
    epochs = [[x["token_ids"].numpy() for x, _ in ds] for _ in range(2)]
    first, second = (np.concatenate(e) for e in epochs)
    assert not np.array_equal(first, second)
    again = np.concatenate([x["token_ids"].numpy() for x, _ in cache.stream(
        8, shuffle=True, seed=3)])
    np.testing.assert_array_equal(again, first)
    expected = rows_by_text(plain, examples, encoder)
    got = rows_by_text(ds, examples, encoder)
    assert len(got) == len(expected)
    for ids, (label, outputs) in expected.items():
        assert got[ids][0] == label
        for key, value in outputs.items():
            np.testing.assert_array_equal(got[ids][1][key], value)


@pytest.mark.slow
def test_stream_in_length_buckets_cuts_inputs_and_taps_together(tmp_path, teacher,
                                                                encoder, examples):
    taps = ["logits", "hidden/1", "attention/2"]
    cache = eager_cache(teacher, encoder, examples, taps, shard_size=16,
                        root=str(tmp_path))
    cache.precompute()
    expected = {tuple(x["token_ids"][i].numpy()[x["padding_mask"][i].numpy() > 0]):
                {k: x[k][i].numpy() for k in x if k.startswith("teacher/")}
                for x, _ in encoder.dataset(examples, 8, extra=cache.load())
                for i in range(len(x["token_ids"]))}
    assert len(expected) == len(examples)  # distinct sentences
    ds = cache.stream(8, shuffle=True, seed=3,
                      length_buckets=LengthBuckets(window=2, multiple=4))
    assert int(ds.cardinality()) == 5
    seen = 0
    for x, _ in ds:
        width = x["token_ids"].shape[1]
        assert width % 4 == 0 or width == SEQ
        assert x["teacher/hidden/1"].shape[1] == width
        assert x["teacher/attention/2"].shape[2:] == (width, width)
        for i in range(len(x["token_ids"])):
            ids = x["token_ids"][i].numpy()
            want = expected[tuple(ids[x["padding_mask"][i].numpy() > 0])]
            np.testing.assert_array_equal(x["teacher/logits"][i], want["teacher/logits"])
            np.testing.assert_array_equal(x["teacher/hidden/1"][i],
                                          want["teacher/hidden/1"][:width])
            np.testing.assert_array_equal(x["teacher/attention/2"][i],
                                          want["teacher/attention/2"][:, :width, :width])
            seen += 1
    assert seen == len(examples)


def test_stream_heals_a_damaged_shard_before_reading(tmp_path, teacher, encoder,
                                                     examples, kdplug_log):
    cache = eager_cache(teacher, encoder, examples, ["logits"], shard_size=16,
                        root=str(tmp_path))
    cache.precompute()
    expected = np.concatenate([x["teacher/logits"].numpy() for x, _ in cache.stream(8)])
    with open(cache.shard_path(1), "r+b") as f:  # flip bytes inside the data
        f.seek(-20, os.SEEK_END)
        f.write(b"\xff" * 8)
    streamed = np.concatenate([x["teacher/logits"].numpy() for x, _ in cache.stream(8)])
    np.testing.assert_array_equal(streamed, expected)
    assert sum("is damaged" in m for m in kdplug_log()) == 1


def test_float16_attention_scores_stay_finite(tmp_path, teacher, encoder, examples):
    # Padded keys carry -1e9 scores: float16 keeps them at its largest
    # finite magnitude instead of -inf.
    cache = eager_cache(teacher, encoder, examples, ["attention_scores/1"],
                        root=str(tmp_path))
    stored = cache.get()["teacher/attention_scores/1"]
    exact = online_taps(teacher, encoder, examples,
                        ["attention_scores/1"])["attention_scores/1"]
    assert np.isfinite(stored).all() and (exact < -1e8).any()
    kept = exact > -1e4
    np.testing.assert_allclose(stored[kept], exact[kept], rtol=2e-3, atol=2e-3)
    assert (stored[~kept] == -np.finfo(np.float16).max).all()


def test_an_entry_in_file_order_is_never_read_and_is_named_once(
        tmp_path, teacher, encoder, examples, kdplug_log):
    # kdplug 0.2.0 stored shards in the file's order (format 1): a file
    # sorted by label streamed one-class batches. Such an entry is not read;
    # the outputs are computed again in shuffled order, and the old entry is
    # named once so that the user can remove it.
    root = str(tmp_path / "outputs")
    cache = eager_cache(teacher, encoder, examples, ["logits"], root=root)
    earlier = dict(cache.components, format=1)
    old_path = os.path.join(root, storage.fingerprint(earlier))
    os.makedirs(old_path)
    storage.write_json(os.path.join(old_path, "manifest.json"), {"complete": True})
    assert old_path != cache.path
    cache.precompute()
    messages = [m for m in kdplug_log() if "in the file's order" in m]
    assert len(messages) == 1 and os.path.basename(old_path) in messages[0]
    assert cache.is_complete() and os.path.isdir(old_path)
    assert eager_cache(teacher, encoder, examples, ["logits"], root=root).precompute()[
        "cached"]
    assert len([m for m in kdplug_log() if "in the file's order" in m]) == 1


def test_a_shard_of_other_rows_is_recomputed(tmp_path, teacher, encoder, examples):
    cache = eager_cache(teacher, encoder, examples, ["logits"], shard_size=16,
                        root=str(tmp_path))
    expected = cache.get()["teacher/logits"]
    with np.load(cache.shard_path(1)) as data:
        arrays = dict(data)
    arrays["index"] = arrays["index"][::-1]  # the rows of another order
    storage.write_npz(cache.shard_path(1), arrays)
    os.remove(os.path.join(cache.path, "manifest.json"))
    assert cache.precompute()["computed"] == [1]
    np.testing.assert_array_equal(cache.load()["teacher/logits"], expected)
