"""The teacher-output cache: run the frozen teacher once, train many times.

A `TeacherCache` runs the teacher over a split's examples, shard by shard, and
stores the requested taps (logits, hidden states, attention, ...) as `.npz`
files under `cache_root()/outputs/<key>/`. The key hashes everything the
outputs depend on (the teacher's weight arrays, the texts and labels, the
tokenizer and sequence length, the taps, the stored dtype and the shard size),
so a changed input simply misses and is computed again under a new key.

Shards hold the examples in a seeded random order, not the order of the file:
shard `k` holds the examples at positions `order[k * shard_size:(k + 1) *
shard_size]` of a fixed permutation (`example_order`), with their indices
stored beside the taps. Every shard is then a random sample of the split, so
`stream()`, which reads a few shards at a time, gives batches that are random
samples even when the file is sorted by label (docs/cache.md, "Data order").

Writes are atomic (temporary name, `fsync`, `os.replace`) and `manifest.json`
is written last: an interrupted precompute leaves only whole shards behind, and
the next run computes just the shards that are missing.

`kdplug.teacher.cache_admin` lists and removes entries (`kdplug cache ls` /
`kdplug cache rm KEY|--all`); see docs/cache.md.
"""

import datetime
import hashlib
import io
import logging
import os
import time
import warnings
import zipfile

import keras
import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug import storage
from kdplug.data.examples import examples_fingerprint
from kdplug.data.length_buckets import outputs_by_length
from kdplug.data.trimming import pad_tap
from kdplug.errors import KdplugError
from kdplug.evaluation.measure import any_batch
from kdplug.storage import cache_root
from kdplug.storage import fingerprint
from kdplug.storage import format_size
from kdplug.teacher.cache_admin import FORMAT_VERSION
from kdplug.teacher.cache_admin import INFO
from kdplug.teacher.cache_admin import MANIFEST
from kdplug.teacher.cache_admin import OUTPUTS_FOLDER
from kdplug.teacher.cache_admin import SHARD
from kdplug.teacher.fingerprints import encoder_fingerprint
from kdplug.teacher.fingerprints import teacher_fingerprint

log = logging.getLogger(__name__)

# The seed of the permutation that spreads a split's examples over the
# shards (part of the on-disk format, `FORMAT_VERSION`), and the name of
# the example indices stored in each shard.
ORDER_SEED = 0
INDEX = "index"
# Seeds the draws that order each shard's rows per epoch (two tf.data
# random streams with the same seed draw the same numbers).
SHARD_DRAW_OFFSET = 2


class TeacherCache:
    """Precomputed teacher taps for one set of examples.

    Args:
        teacher: the frozen teacher, a model with `taps(inputs, names,
            training)` (e.g. `kdplug.models.BertClassifier`); a plain Keras
            model works when only `"logits"` is requested.
        encoder: the `kdplug.data.TextEncoder` that tokenises the examples
            (its tokenizer and sequence length are part of the key).
        examples: `kdplug.data.Examples` to run the teacher on.
        taps: the tap names to store, e.g. `["logits", "hidden/2"]`.
        dtype: `"float16"` (default, half the disk) or `"float32"` (exact).
        shard_size: examples per shard file (the unit of resumption).
        batch_size: examples per teacher forward pass.
        root: the folder holding cache entries; defaults to
            `cache_root()/outputs`.
        run_eagerly: tokenise and run the teacher eagerly, batch by batch,
            instead of through `tf.data` and a `tf.function`: no tracing, so
            faster for a few small batches (tests), slower for real data.
        jit_compile: XLA-compile the teacher's forward pass (`kdplug run`
            passes `training.jit_compile`; on a CPU, compiling a toy model
            takes seconds, longer than its forward passes).
        length_buckets: a `kdplug.data.length_buckets.LengthBuckets`
            (`kdplug run` passes `training.length_buckets`): the teacher
            reads each shard's examples sorted by length, `batch_size` at a
            time, each batch cut to its longest sentence rounded up to
            `length_buckets.multiple` (one XLA compilation per width, at
            most `sequence_length / multiple`; a shard's last, shorter batch
            is filled up with repeated rows, so no batch shape of its own).
            The stored entry is the padded one's: the same key, shapes and
            order, the same values up to float rounding at every real
            position (`pad_tap`). None: every batch padded to
            `sequence_length`.

    Examples:

    ```python
    cache = TeacherCache(teacher, encoder, splits["train"], ["logits"])
    extra = cache.get()            # computes the missing shards, then loads
    train_ds = encoder.dataset(splits["train"], 32, shuffle=True, extra=extra)
    Distiller(student, teacher, terms).fit(train_ds)   # never runs the teacher
    ```
    """

    def __init__(self, teacher, encoder, examples, taps=("logits",),
                 dtype="float16", shard_size=2048, batch_size=64, root=None,
                 run_eagerly=False, jit_compile=True, length_buckets=None):
        if dtype not in ("float16", "float32"):
            raise KdplugError(f"cache dtype must be float16 or float32, got {dtype!r}")
        if int(shard_size) < 1 or int(batch_size) < 1:
            raise KdplugError("cache shard_size and batch_size must be >= 1")
        if len(examples) == 0:
            raise KdplugError("TeacherCache: no examples to run the teacher on")
        taps = sorted(set(taps))
        if not taps:
            raise KdplugError("TeacherCache needs at least one tap name")
        available = getattr(teacher, "available_taps", None)
        if available is not None:
            unknown = sorted(set(taps) - set(available()))
            if unknown:
                raise KdplugError(
                    f"the teacher has no tap(s) {unknown}; it offers "
                    f"{', '.join(available())}"
                )
        elif taps != ["logits"] and not hasattr(teacher, "taps"):
            raise KdplugError(
                f"the teacher has no taps() method, so only 'logits' can be "
                f"cached (asked for {taps})"
            )
        self.teacher = teacher
        self.encoder = encoder
        self.examples = examples
        self.taps = taps
        self.dtype = dtype
        self.shard_size = int(shard_size)
        self.batch_size = int(batch_size)
        self.root = root or os.path.join(cache_root(), OUTPUTS_FOLDER)
        self.run_eagerly = bool(run_eagerly)
        self.jit_compile = bool(jit_compile)
        self.length_buckets = length_buckets
        _warn_if_special_tokens_split(encoder, examples)
        self.order = example_order(self.num_examples)
        self.components = self._components()
        self.key = fingerprint(self.components)
        self.path = os.path.join(self.root, self.key)
        self._forward = None

    # ----------------------------------------------------------------- layout
    @property
    def num_examples(self):
        return len(self.examples)

    @property
    def num_shards(self):
        return max(1, -(-self.num_examples // self.shard_size))

    def shard_range(self, index):
        """`(start, stop)`: the positions in `order` that shard `index` holds."""
        start = index * self.shard_size
        return start, min(start + self.shard_size, self.num_examples)

    def shard_indices(self, index):
        """The indices into `examples` of the rows of shard `index`, in the
        order they are stored (a random sample of the split)."""
        return self.order[slice(*self.shard_range(index))]

    def shard_path(self, index):
        return os.path.join(self.path, SHARD.format(index))

    def is_complete(self):
        """True when the manifest and every shard it lists are on disk, each
        of the recorded size (contents are verified by `load()`)."""
        manifest = storage.read_json(os.path.join(self.path, MANIFEST))
        return bool(manifest) and manifest.get("key") == self.key and all(
            _size(os.path.join(self.path, s["file"])) == s.get("bytes")
            for s in manifest.get("shards", [])
        )

    def estimated_bytes(self):
        """Bytes the complete entry will take: the taps of the first example
        (one eager forward pass) times the number of examples."""
        first = self.examples.select([0])
        x = self.encoder.encode_examples(first)
        result = self._taps({k: tf.constant(v) for k, v in x.items()})
        per_example = sum(int(np.prod(keras.ops.shape(result[t])[1:]))
                          for t in self.taps) * np.dtype(self.dtype).itemsize
        return per_example * self.num_examples

    def disk_size(self):
        """Bytes used by this entry on disk (0 when absent)."""
        return storage.dir_size(self.path)

    # -------------------------------------------------------------- compute
    def precompute(self, on_shard=None):
        """Computes the shards that are not on disk yet, then the manifest.

        Args:
            on_shard: optional `fn(index, num_shards)` called after each newly
                written shard; an exception raised there stops the run and
                leaves the finished shards for the next call to reuse.

        Returns:
            A dict: `key`, `path`, `bytes` (disk size), `computed` and
            `reused` (shard indices), `cached` (True if nothing was
            computed) and `seconds`.
        """
        start = time.perf_counter()
        if self.is_complete():
            size = self.disk_size()
            log.info(f"teacher cache: hit {self.key} "
                     f"({self.num_examples} examples, {format_size(size)})")
            return self._result([], list(range(self.num_shards)), size, start)
        self._note_earlier_format()
        storage.mark_entry(self.path, "teacher-outputs", self.key)
        storage.remove_stale_temporaries(self.path)
        was_complete = os.path.exists(os.path.join(self.path, MANIFEST))
        if was_complete:
            os.remove(os.path.join(self.path, MANIFEST))  # names a lost shard
        info_path = os.path.join(self.path, INFO)
        if not os.path.isfile(info_path):
            _write_json(info_path, self._info())
        missing = []
        reused = []
        for index in range(self.num_shards):
            if self._valid_shard(index):
                reused.append(index)
            else:
                missing.append(index)
        if was_complete:
            log.warning(
                "teacher cache: entry %s was damaged (%s missing or unreadable); "
                "recomputing %d shard(s)", self.key,
                ", ".join(SHARD.format(i) for i in missing), len(missing))
        computed = []
        for index, arrays in self._missing_shards(missing):
            storage.write_npz(self.shard_path(index), arrays)
            computed.append(index)
            log.info(f"teacher cache: shard {index + 1}/{self.num_shards} "
                     f"({len(arrays[self.taps[0]])} examples) written")
            if on_shard is not None:
                on_shard(index, self.num_shards)
        shard_rows = []
        for index in range(self.num_shards):
            lo, hi = self.shard_range(index)
            shard_rows.append({
                "file": os.path.basename(self.shard_path(index)),
                "start": lo,
                "stop": hi,
                "bytes": os.path.getsize(self.shard_path(index)),
                "sha256": storage.file_sha256(self.shard_path(index)),
            })
        manifest = dict(self._info(), shards=shard_rows, order_seed=ORDER_SEED,
                        tap_shapes=self._tap_shapes(), complete=True)
        manifest["bytes"] = sum(s["bytes"] for s in shard_rows)
        _write_json(os.path.join(self.path, MANIFEST), manifest)
        size = self.disk_size()
        log.info(f"teacher cache: stored {self.key} ({len(computed)} shard(s) "
                 f"computed, {len(reused)} reused, {format_size(size)} on disk)")
        return self._result(computed, reused, size, start)

    def load(self):
        """The cached taps as `{"teacher/<tap>": float32 array}`.

        Row `i` of every array belongs to `examples[i]`, so the dict can be
        passed as `extra=` to `TextEncoder.dataset()`. Every shard is checked
        against the sha256 recorded in the manifest as it is read; damaged
        shards are recomputed (one warning) and the entry read again.
        """
        try:
            return self._read()
        except DamagedEntry as damaged:
            self._rebuild(damaged)
        try:
            return self._read()
        except DamagedEntry as damaged:
            raise KdplugError(
                f"teacher cache {self.path}: shards damaged again right after "
                f"being recomputed ({damaged}); check the disk") from None

    def _rebuild(self, damaged):
        """Removes `damaged`'s shards and the manifest, warns once, and
        computes the missing shards again."""
        log.warning(
            "teacher cache: entry %s is damaged (%s); recomputing %d shard(s)",
            self.key, "; ".join(f"{f}: {why}" for f, why in damaged.files),
            len(damaged.files))
        for name, _ in damaged.files:
            if os.path.exists(os.path.join(self.path, name)):
                os.remove(os.path.join(self.path, name))
        os.remove(os.path.join(self.path, MANIFEST))
        self.precompute()

    def _manifest(self):
        manifest = storage.read_json(os.path.join(self.path, MANIFEST))
        if not manifest or manifest.get("key") != self.key:
            raise KdplugError(
                f"teacher cache {self.key} is not complete at {self.path}; "
                "call precompute() (or get()) first"
            )
        return manifest

    def _read(self):
        manifest = self._manifest()
        shapes = manifest["tap_shapes"]
        out = {
            tap: np.empty((self.num_examples, *shapes[tap]), dtype="float32")
            for tap in self.taps
        }
        damaged = []
        for shard in manifest["shards"]:
            path = os.path.join(self.path, shard["file"])
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                damaged.append((shard["file"], e.strerror or "unreadable"))
                continue
            if "sha256" in shard and hashlib.sha256(data).hexdigest() != shard["sha256"]:
                damaged.append((shard["file"], "checksum mismatch"))
                continue
            try:
                with np.load(io.BytesIO(data)) as arrays:
                    rows = arrays[INDEX]
                    expected = self.order[shard["start"]:shard["stop"]]
                    if not np.array_equal(rows, expected):
                        raise ValueError("its example indices are not the entry's")
                    for tap in self.taps:
                        out[tap][rows] = arrays[tap]
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
                damaged.append((shard["file"], f"unreadable: {e}"))
        if damaged:
            raise DamagedEntry(damaged)
        return {keys.teacher_key(tap): value for tap, value in out.items()}

    def get(self, on_shard=None):
        """`precompute()` (a no-op when complete), then `load()`."""
        self.precompute(on_shard=on_shard)
        return self.load()

    def verify(self):
        """Checks every shard of a complete entry against its recorded
        sha256, reading one block at a time (memory stays flat); damaged
        shards are recomputed with one warning. Returns the manifest."""
        manifest = self._manifest()
        damaged = []
        for shard in manifest["shards"]:
            path = os.path.join(self.path, shard["file"])
            try:
                digest = storage.file_sha256(path)
            except OSError as e:
                damaged.append((shard["file"], e.strerror or "unreadable"))
                continue
            if "sha256" in shard and digest != shard["sha256"]:
                damaged.append((shard["file"], "checksum mismatch"))
        if damaged:
            self._rebuild(DamagedEntry(damaged))
            manifest = self._manifest()
        return manifest

    def stream(self, batch_size, shuffle=False, seed=0, drop_remainder=False,
               features=None, cycle_length=2, length_buckets=None):
        """A batched `(features, labels)` dataset of the examples with their
        cached taps, read from disk shard by shard.

        Never holds the split's outputs in memory: `tf.data` reads
        `cycle_length` shards at a time (in parallel, prefetched), tokenises
        each shard's texts as it is read, and casts the stored taps to
        float32 per batch. Each shard is a random sample of the split (the
        cache stores the examples in a seeded random order, not the file's),
        so batches are random samples of the split whatever order the data
        came in. With `shuffle`, every epoch reads the shards in a new order,
        each shard's rows in a new order, takes examples from `cycle_length`
        shards in turn (one example at a time, not whole shards), and mixes
        them in a buffer of one shard: a seeded, deterministic order, drawn
        anew each epoch. Without `shuffle`, the examples come in the stored
        order (`order`). Peak memory is about `cycle_length + 1` shards plus
        two batches, whatever the number of examples
        (bench/cache_memory.py): lower `cache.shard_size` for large taps
        (hidden states, attention maps).

        Args:
            batch_size: int.
            shuffle: bool. Reshuffle every epoch (seeded).
            seed: int. Shuffle seed.
            drop_remainder: bool. Drop the last partial batch.
            features: optional `fn(examples) -> {name: array}` giving the
                model inputs of a shard's `Examples`; default the cache's
                encoder (`encoder.encode_examples`). The cached taps are
                added under `"teacher/<tap>"`.
            cycle_length: int. Shards read concurrently (and taken from in
                turn).
            length_buckets: a `kdplug.data.length_buckets.LengthBuckets`:
                batches of similar lengths, each cut (inputs and per-token
                taps) to its longest sentence; adds a window and a buffer
                of `window * batch_size` examples each to the peak memory.
                None: every batch padded to `sequence_length`.

        Examples:

        ```python
        cache = TeacherCache(teacher, encoder, transfer_set, ["logits", "hidden/3"])
        cache.precompute()
        train_ds = cache.stream(32, shuffle=True, seed=0)
        Distiller(student, teacher, terms).fit(train_ds)
        ```
        """
        manifest = self.verify()
        features = features or self.encoder.encode_examples
        labels = np.asarray(self.examples.labels)
        taps = self.taps

        def read(index, draw):
            with np.load(self.shard_path(int(index))) as data:
                rows = data[INDEX]
                # this epoch's order of the shard's rows
                within = (np.random.default_rng(int(draw)).permutation(len(rows))
                          if shuffle else np.arange(len(rows)))
                row = dict(features(self.examples.select(rows[within])))
                for tap in taps:
                    row[keys.teacher_key(tap)] = data[tap][within]
            yield row, labels[rows[within]]

        # The element signature from one example's features and the
        # manifest's tap shapes (no shard is read before training starts).
        one = features(self.examples.select([0]))
        signature = (
            {**{k: tf.TensorSpec((None, *v.shape[1:]), tf.as_dtype(v.dtype))
                for k, v in one.items()},
             **{keys.teacher_key(t): tf.TensorSpec((None, *manifest["tap_shapes"][t]),
                                                   self.dtype) for t in taps}},
            tf.TensorSpec((None, *labels.shape[1:]), tf.as_dtype(labels.dtype)),
        )

        def examples_of(index, draw):
            return tf.data.Dataset.from_generator(
                read, args=(index, draw), output_signature=signature).unbatch()

        shards = tf.data.Dataset.range(self.num_shards)
        # one draw per shard and epoch: the order of its rows
        draws = tf.data.Dataset.random(seed=seed + SHARD_DRAW_OFFSET,
                                       rerandomize_each_iteration=True)
        if shuffle:
            shards = shards.shuffle(self.num_shards, seed=seed,
                                    reshuffle_each_iteration=True)
        cycle = cycle_length if shuffle else 1  # unshuffled: the stored order
        ds = tf.data.Dataset.zip((shards, draws)).interleave(
            examples_of, cycle_length=cycle, block_length=1,
            num_parallel_calls=cycle, deterministic=True)
        if shuffle:
            ds = ds.shuffle(min(self.shard_size, self.num_examples), seed=seed + 1,
                            reshuffle_each_iteration=True)
        if length_buckets is None:
            ds = ds.batch(batch_size, drop_remainder=drop_remainder)
        else:
            ds = length_buckets.batch(ds, batch_size, self.num_examples, shuffle=shuffle,
                                      seed=seed, drop_remainder=drop_remainder)
        batches = (self.num_examples // batch_size if drop_remainder
                   else -(-self.num_examples // batch_size))
        ds = ds.apply(tf.data.experimental.assert_cardinality(batches))

        def as_float32(x, y):
            return {k: tf.cast(v, "float32") if keys.is_teacher_key(k) else v
                    for k, v in x.items()}, y

        return ds.map(as_float32).prefetch(2)  # a fixed, small read-ahead

    # -------------------------------------------------------------- helpers
    def _missing_shards(self, missing):
        """Yields `(index, {tap: array, INDEX: example indices})` for the
        given shards, in order, one shard in memory at a time."""
        for index in missing:
            rows = self.shard_indices(index)
            part = self.examples.select(rows)
            if self.length_buckets is not None:
                arrays = self._bucketed_outputs(part)
            else:
                outputs = {tap: [] for tap in self.taps}
                for result in self._outputs(part):
                    for tap in self.taps:
                        outputs[tap].append(_storable(
                            keras.ops.convert_to_numpy(result[tap]), self.dtype))
                arrays = {t: np.concatenate(v, axis=0) for t, v in outputs.items()}
            yield index, dict(arrays, **{INDEX: rows})

    def _bucketed_outputs(self, part):
        """`{tap: stored array}` of `part`'s examples, in `part`'s order,
        the teacher reading them in batches of similar length, each cut to
        its longest sentence (`outputs_by_length`); every tap padded back
        to `sequence_length` (`pad_tap`)."""
        if self._forward is None and not self.run_eagerly:
            # one trace for every width (XLA still compiles each shape once)
            self._forward = tf.function(self._taps, jit_compile=self.jit_compile,
                                        autograph=False, reduce_retracing=True)
        length = self.encoder.sequence_length
        return outputs_by_length(
            self._taps if self.run_eagerly else self._forward,
            self.encoder.encode_examples(part),
            min(self.batch_size, self.num_examples),  # one batch size per entry
            self.length_buckets.multiple,
            restore=lambda tap, value: _storable(pad_tap(value, tap, length), self.dtype))

    def _outputs(self, part):
        """Yields the teacher's taps batch by batch."""
        if self.run_eagerly:
            for i in range(0, len(part), self.batch_size):
                texts = tf.constant(part.texts[i:i + self.batch_size])
                pairs = None if part.pairs is None else tf.constant(
                    part.pairs[i:i + self.batch_size])
                yield self._taps(self.encoder(texts, pairs))
            return
        if self._forward is None:
            self._forward = any_batch(tf.function(
                self._taps, jit_compile=self.jit_compile, autograph=False))
        for x, _ in self.encoder.dataset(part, self.batch_size):
            yield self._forward(x)

    def _taps(self, x):
        if hasattr(self.teacher, "taps"):
            return self.teacher.taps(x, self.taps, training=False)
        return {"logits": self.teacher(x, training=False)}

    def _tap_shapes(self):
        with np.load(self.shard_path(0)) as data:
            return {tap: list(data[tap].shape[1:]) for tap in self.taps}

    def _valid_shard(self, index):
        """True when shard `index` is on disk, readable, holds this entry's
        rows (its stored example indices) and every tap in the stored dtype."""
        path = self.shard_path(index)
        if not os.path.isfile(path):
            return False
        rows = self.shard_indices(index)
        try:
            with np.load(path) as data:
                return INDEX in data.files and np.array_equal(data[INDEX], rows) and all(
                    tap in data.files
                    and data[tap].shape[0] == len(rows)
                    and data[tap].dtype == np.dtype(self.dtype)
                    for tap in self.taps
                )
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            return False

    def _note_earlier_format(self):
        """Logs once when the same outputs were cached by an earlier kdplug
        in file order (format 1): that entry is never read, since a file
        sorted by label would stream as one-class batches."""
        components = {k: v for k, v in self.components.items()}
        components["format"] = 1
        earlier = os.path.join(self.root, fingerprint(components))
        if os.path.isfile(os.path.join(earlier, MANIFEST)):
            log.warning(
                "teacher cache: entry %s holds these outputs in the file's order "
                "(written by kdplug 0.2.0 or earlier), which can stream batches of "
                "one class; computing them again in a shuffled order as %s "
                "(`kdplug cache rm %s` frees %s)", os.path.basename(earlier),
                self.key, os.path.basename(earlier),
                format_size(storage.dir_size(earlier)))

    def _components(self):
        return {
            "format": FORMAT_VERSION,
            "teacher": teacher_fingerprint(self.teacher),
            "data": examples_fingerprint(self.examples),
            "preprocessing": encoder_fingerprint(self.encoder),
            "taps": self.taps,
            "dtype": self.dtype,
            "shard_size": self.shard_size,
        }

    def _info(self):
        return {
            "key": self.key,
            "format": FORMAT_VERSION,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
            "num_examples": self.num_examples,
            "num_shards": self.num_shards,
            "taps": self.taps,
            "dtype": self.dtype,
            "sequence_length": self.encoder.sequence_length,
            "teacher": type(self.teacher).__name__,
            "source": self.examples.source,
            "components": self.components,
        }

    def _result(self, computed, reused, size, start):
        return {
            "key": self.key,
            "path": self.path,
            "bytes": size,
            "computed": computed,
            "reused": reused,
            "cached": not computed,
            "seconds": time.perf_counter() - start,
        }


def example_order(num_examples):
    """The order in which a teacher-output entry stores `num_examples`
    examples: a permutation seeded by `ORDER_SEED` (the same for every
    entry of that size, so a resumed precompute finds its shards).

    Examples:

    >>> sorted(example_order(5).tolist())
    [0, 1, 2, 3, 4]
    """
    return np.random.default_rng(ORDER_SEED).permutation(int(num_examples))


class DamagedEntry(KdplugError):
    """Shards of a complete entry that fail their checksum or do not load.

    Args:
        files: `[(shard file name, reason)]`.
    """

    def __init__(self, files):
        self.files = files
        super().__init__(", ".join(f"{f}: {why}" for f, why in files))


def _storable(array, dtype):
    """`array` as the stored dtype; float16 values are clipped to its finite
    range first (attention scores mask padded keys with -1e9, which would
    become -inf; every term masks those keys out again)."""
    if dtype == "float16":
        limit = np.finfo(np.float16).max
        array = np.clip(array, -limit, limit)
    return array.astype(dtype)


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _warn_if_special_tokens_split(encoder, examples):
    """Augmented texts carry "[MASK]"; a tokenizer that splits it into
    "[", "mask", "]" shows the teacher three word pieces instead."""
    tokenizer = encoder.tokenizer
    if getattr(tokenizer, "special_tokens_in_strings", True):
        return
    mask = getattr(tokenizer, "mask_token", None) or "[MASK]"
    texts = examples.texts + (examples.pairs or [])
    if any(mask in str(t) for t in texts):
        warnings.warn(
            f"some texts contain {mask!r} but the tokenizer splits it into word "
            f"pieces; build it with special_tokens_in_strings=True (e.g. "
            f"BertTokenizer.from_preset(dir, special_tokens_in_strings=True)) "
            f"so that the teacher sees its mask token", stacklevel=3)


def _write_json(path, obj):
    storage.write_json(path, obj, indent=1, sort_keys=True)
