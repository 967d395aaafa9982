"""The frozen teacher run inside the input pipeline (`teacher.pipeline:`)."""

import tensorflow as tf
from keras import ops

from kdplug import keys
from kdplug.data.trimming import trim_to_longest
from kdplug.errors import KdplugError
from kdplug.models.float32_copy import policy_copy

DTYPES = ("auto", "float32", "bfloat16", "float16")
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")


class TeacherPipeline:
    """Adds the teacher's outputs to every batch of a `tf.data` pipeline.

    The online alternative to the teacher-output cache: `dataset.map` runs
    the frozen teacher on each batch and adds its taps to the features as
    `teacher/<tap>`, which `Distiller.train_step` reads instead of running
    the teacher itself. Three things make that faster than the teacher
    inside the (XLA-compiled) train step:

    - `dtype`: the teacher runs as a copy whose variables and compute are in
      `bfloat16` (or `float16`): inference needs no float32 master weights,
      and on CPUs with AMX/AVX-512-BF16 or on GPUs its matmuls run at the
      reduced precision's speed. Outputs are cast back to float32. `"auto"`
      (the default) picks bfloat16 where the hardware has it (a GPU, or a
      CPU flag in `BF16_CPU_FLAGS`) and float32 elsewhere: a CPU without
      them emulates bfloat16, slower than float32 (measured on an AMD EPYC
      without AVX-512-BF16: 983 vs 915 ms per MiniLM-L6 batch).
    - `jit_compile`: XLA for the teacher's forward pass. `None` (auto): on for
      float32 and on GPUs, off for bfloat16/float16 on a CPU, where XLA's CPU
      backend is slower than oneDNN in bfloat16 (measured on a Sapphire
      Rapids Xeon: 237 ms with XLA vs 147 ms without). Trimmed batches come
      in a few lengths (multiples of `multiple`), each compiled once.
    - `trim_padding`: when every requested tap is per-example (`logits`,
      `pooled`, `cls/<i>`), the teacher sees the batch cut to its longest
      sequence (rounded up to a multiple of `multiple`): padded positions
      are masked, so the outputs are the same, minus the padding's cost.
    - `length_chunks`: with `trim_padding`, the batch's examples are sorted
      by length and the teacher runs on `length_chunks` equal pieces, each
      cut to its own longest sequence; outputs go back to the batch's order.
      The student's batches are untouched, so training is the same; the
      teacher skips most of the padding a batch of mixed lengths carries
      (on movie_snippets at length 64: 87% of the padded tokens remain
      after trimming, 57% with 4 chunks).
    - overlap: `prefetch` lets the next batch's teacher pass run while the
      student trains on this one (pays where the step leaves cores or a
      GPU stream idle; on a 2-core CPU both already work on the step).

    Create it outside any `tf.distribute` scope: the copy's variables are
    then plain ones the input pipeline can read, and it works under every
    strategy (each worker's pipeline runs its own copy on the host).

    Args:
        teacher: a frozen kdplug classifier with `taps()` and
            `get_config()` (e.g. `BertClassifier`).
        tap_names: the taps to add (e.g. `distiller.teacher_tap_names`).
        dtype: `"auto"`, `"float32"`, `"bfloat16"` or `"float16"`.
        trim_padding: bool. See above.
        jit_compile: bool or None (auto). See above.
        multiple: int. Trimmed lengths are rounded up to a multiple of this.
        length_chunks: int >= 1. See above (1: trim the batch as a whole).
        prefetch: batches computed ahead (`tf.data.AUTOTUNE` by default).

    Examples:

    ```python
    distiller = Distiller(student, teacher, terms)
    pipeline = TeacherPipeline(teacher, distiller.teacher_tap_names,
                               dtype="bfloat16")
    distiller.fit(pipeline(train_ds), epochs=3)  # the step never runs the teacher
    ```
    """

    def __init__(self, teacher, tap_names, dtype="auto", trim_padding=True,
                 multiple=8, prefetch=tf.data.AUTOTUNE, jit_compile=None,
                 length_chunks=4):
        if dtype not in DTYPES:
            raise KdplugError(f"teacher pipeline dtype must be one of {DTYPES}, "
                              f"got {dtype!r}")
        if int(length_chunks) != length_chunks or length_chunks < 1:
            raise KdplugError("teacher pipeline length_chunks must be an integer "
                              f">= 1, got {length_chunks!r}")
        if not tap_names:
            raise KdplugError("teacher pipeline: no teacher taps to compute")
        self.tap_names = sorted(tap_names)
        self.dtype = best_inference_dtype() if dtype == "auto" else dtype
        self.trim_padding = bool(trim_padding) and all(
            per_example_tap(n) for n in self.tap_names)
        self.multiple = int(multiple)
        self.length_chunks = int(length_chunks) if self.trim_padding else 1
        self.prefetch = prefetch
        self.teacher = inference_copy(teacher, self.dtype)
        if jit_compile is None:
            jit_compile = self.dtype == "float32" or has_gpu()
        self.jit_compile = bool(jit_compile)
        # Plain Python control flow only: no autograph (its transpiling of
        # the teacher's `taps` cost seconds per pipeline).
        self._forward = tf.function(self._taps, jit_compile=self.jit_compile,
                                    autograph=False)

    def __call__(self, dataset):
        """`dataset` of `(x, ...)` batches -> the same with teacher taps in `x`."""
        if carries_taps(dataset, self.tap_names):
            return dataset  # already there (teacher-output cache)
        add_taps = tf.autograph.experimental.do_not_convert(self._add_taps)
        return dataset.map(add_taps).prefetch(self.prefetch)

    def outputs(self, x):
        """The teacher's taps (float32) for one batch of features."""
        names = getattr(self.teacher, "input_keys", None) or tuple(x)
        inputs = keys.model_inputs({k: x[k] for k in names if k in x})
        if not (self.trim_padding and keys.PADDING_MASK in inputs):
            return self._forward(inputs)
        if self.length_chunks == 1:
            return self._forward(trim_to_longest(inputs, self.multiple))
        return self._chunked(inputs)

    def _chunked(self, inputs):
        """Per-example taps of the batch run in length-sorted chunks, each
        trimmed, and put back in the batch's order."""
        lengths = tf.reduce_sum(tf.cast(inputs[keys.PADDING_MASK], "int32"), axis=1)
        order = tf.argsort(lengths, stable=True)
        batch = tf.shape(lengths)[0]
        pieces = []
        for i in range(self.length_chunks):
            start = batch * i // self.length_chunks
            size = batch * (i + 1) // self.length_chunks - start
            # A batch smaller than length_chunks leaves chunks empty: those
            # run on one (repeated) example and keep none of its outputs.
            rows = tf.gather(order, tf.minimum(start + tf.range(tf.maximum(size, 1)),
                                               batch - 1))
            chunk = {k: tf.gather(v, rows) for k, v in inputs.items()}
            out = self._forward(trim_to_longest(chunk, self.multiple))
            pieces.append({n: v[:size] for n, v in out.items()})
        back = tf.argsort(order)  # batch position -> row of the sorted outputs
        return {n: tf.gather(tf.concat([p[n] for p in pieces], axis=0), back)
                for n in self.tap_names}

    def _taps(self, inputs):
        taps = self.teacher.taps(inputs, self.tap_names, training=False)
        return {n: ops.cast(v, "float32") for n, v in taps.items()}

    def _add_taps(self, x, *rest):
        out = dict(x)
        for name, value in self.outputs(x).items():
            out[keys.teacher_key(name)] = value
        return (out, *rest) if rest else out


def has_gpu():
    return bool(tf.config.list_physical_devices("GPU"))


def best_inference_dtype(cpuinfo="/proc/cpuinfo"):
    """`"bfloat16"` with a GPU or a CPU with native bfloat16 matmuls
    (`BF16_CPU_FLAGS`), else `"float32"`."""
    if has_gpu():
        return "bfloat16"
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        flags = []
    return "bfloat16" if any(flag in flags for flag in BF16_CPU_FLAGS) else "float32"


def carries_taps(dataset, tap_names):
    """Whether `dataset`'s features already hold every `teacher/<tap>`."""
    features = dataset.element_spec
    features = features[0] if isinstance(features, tuple) else features
    return all(keys.teacher_key(n) in features for n in tap_names)


def per_example_tap(name):
    """Taps with one vector per example, which padding cannot change."""
    return name in ("logits", "pooled") or name.startswith("cls/")


def inference_copy(teacher, dtype):
    """A frozen copy of `teacher` with `dtype` variables and compute, built
    outside any distribution strategy scope."""
    if not (hasattr(teacher, "taps") and hasattr(teacher, "get_config")):
        raise KdplugError(
            f"teacher pipeline: the teacher ({type(teacher).__name__}) needs "
            "taps() and get_config() (kdplug's classifiers have both)")
    if tf.distribute.has_strategy():
        raise KdplugError(
            "teacher pipeline: create it outside `strategy.scope()` (the input "
            "pipeline reads plain variables, not mirrored ones)")
    copy = policy_copy(teacher, dtype)
    copy.trainable = False
    return copy
