"""Measuring a student's exports: size on disk, CPU latency, accuracy.

`StudentExporter` (`kdplug.evaluation.export`) writes the files;
`ExportMeasurer` runs them. A run does both (`export_and_measure`): its
report's `export` section.
"""

import os
import warnings

import numpy as np
import tensorflow as tf

from kdplug.errors import KdplugError
from kdplug.evaluation import preset_export
from kdplug.evaluation.export import DEFAULT_FORMATS
from kdplug.evaluation.export import FORMATS
from kdplug.evaluation.export import PRESET
from kdplug.evaluation.export import SIGNATURE
from kdplug.evaluation.export import TFLITE_FORMATS
from kdplug.evaluation.measure import forward_function
from kdplug.evaluation.measure import masked_accuracy
from kdplug.evaluation.measure import time_ms
from kdplug.storage import tree_size


def export_and_measure(exporter, out_dir, dataset, formats=DEFAULT_FORMATS,
                       batch_sizes=(1, 32), runs=20, metric=None, keras_file=None):
    """Exports, then measures: the report's `export` section.

    Args:
        exporter: a `StudentExporter`.
        out_dir: the folder the exports go to.
        dataset: `(features, labels)` batches, measured on.
        formats: the formats written (`StudentExporter.export`).
        batch_sizes: the latency's batch sizes.
        runs: timed runs per latency.
        metric: `(name, fn)` measured under its name instead of accuracy
            (see `ExportMeasurer.accuracy`'s `score`), or None.
        keras_file: the student already saved (`StudentExporter.export`).

    Returns:
        `{"files", "size_bytes", "latency_ms", "accuracy", "notes"}` (the
        metric's name for `accuracy`), and `vocab`, `vocab_file()`, when
        `vocab.txt` was written.
    """
    files = exporter.export(out_dir, formats, keras_file=keras_file)
    report = {"files": files,
              **ExportMeasurer(exporter).measure(dataset, batch_sizes, runs, metric),
              "notes": list(exporter.notes)}
    if exporter.vocab is not None:
        report["vocab"] = exporter.vocab_file()
    return report


class ExportMeasurer:
    """Measures what a `StudentExporter` exported: every export's size on
    disk, its CPU latency and its accuracy (or another score), each format
    run from its own files (`"keras"`: the in-memory model). A format that
    does not run here (a TFLite model with TF select ops needs the Flex
    delegate, which the interpreter in the `tensorflow` package lacks) is
    left out, with a note in the exporter's `notes`.

    Args:
        exporter: the `StudentExporter`, after `export()`.

    Examples:

    ```python
    exporter.export("runs/sst2/export")
    measurer = ExportMeasurer(exporter)
    measurer.size_bytes()["tflite_int8"]
    measurer.latency_ms(test_ds)["tflite_int8"]["batch_32"]["median"]
    measurer.accuracy(test_ds)["tflite_int8"]
    ```
    """

    def __init__(self, exporter):
        self.exporter = exporter
        self.predictors = {}

    def measure(self, dataset, batch_sizes=(1, 32), runs=20, metric=None):
        """`{"size_bytes", "latency_ms", "accuracy"}` of every export; with
        `metric=(name, fn)` (see `accuracy`'s `score`) that metric under
        its name instead of accuracy."""
        name, score = metric or ("accuracy", None)
        return {
            "size_bytes": self.size_bytes(),
            "latency_ms": self.latency_ms(dataset, batch_sizes=batch_sizes, runs=runs),
            name: self.accuracy(dataset, score=score),
        }

    def size_bytes(self):
        """`{format: bytes on disk}` of every export (a SavedModel is a folder:
        the sum of its files)."""
        return {fmt: tree_size(path) for fmt, path in self.exporter.paths.items()}

    def predictor(self, fmt):
        """A function `features -> logits (numpy)` running one format.

        `"keras"` runs the in-memory model (in a `tf.function`), the others
        the exported files.
        """
        if fmt in self.predictors:
            return self.predictors[fmt]
        if fmt == "keras":  # the trace the run's evaluation made, if any
            forward = forward_function(self.exporter.model)

            def predict(features):
                return forward(self._tensors(features)).numpy()
        elif fmt == "saved_model":
            loaded = tf.saved_model.load(self._path(fmt))

            def predict(features):  # keeps `loaded` (the variables) alive
                out = loaded.signatures[SIGNATURE](**self._tensors(features))
                return next(iter(out.values())).numpy()
        elif fmt in TFLITE_FORMATS:
            predict = tflite_predictor(self._path(fmt), self.exporter.input_keys,
                                       self.exporter.num_threads)
        elif fmt == PRESET:
            predict = preset_predictor(self._path(fmt), self.exporter.input_keys)
        else:
            raise KdplugError(f"unknown export format {fmt!r}; known: {list(FORMATS)}")
        self.predictors[fmt] = predict
        return predict

    def latency_ms(self, features, formats=None, batch_sizes=(1, 32), runs=20, warmup=3):
        """CPU latency of one forward pass, per format and batch size.

        Args:
            features: a dict of arrays, or a dataset of `(features, labels)`
                batches; its first examples are repeated to fill each batch.
            formats: defaults to `"keras"` plus every exported format but
                `".keras"` (a reloaded `.keras` file runs the same graph)
                that runs here (see `notes` for those that do not).
            batch_sizes: the batch sizes measured.
            runs: timed runs; the median, min and max are reported.
            warmup: untimed runs first (tracing, allocation).

        Returns:
            `{format: {"batch_<n>": {"median", "min", "max"}}}` in ms.
        """
        base = first_features(features, max(batch_sizes))
        formats = formats or self._measured_formats(base)
        result = {}
        for fmt in formats:
            predict = self.predictor(fmt)
            result[fmt] = {}
            for n in batch_sizes:
                batch = repeat_to(base, n)
                result[fmt][f"batch_{n}"] = time_ms(lambda: predict(batch), runs, warmup)
        return result

    def accuracy(self, dataset, formats=None, score=None):
        """Top-1 accuracy per format on a dataset of `(features, labels)`
        batches; labels `< 0` are skipped.

        Args:
            dataset: a `tf.data.Dataset` or any iterable of batches.
            formats: defaults to `"keras"`, the TFLite exports that run
                here and the keras-hub preset (reloaded).
            score: `fn(outputs, labels) -> float` measured instead of
                accuracy (e.g. a regression task's Pearson correlation), on
                the whole dataset's outputs.
        """
        if formats is None:
            probe = first_features(dataset, 1)
            formats = [f for f in self._measured_formats(probe)
                       if f in ("keras", PRESET) or f.startswith("tflite")]
        if score is not None:
            outputs = {fmt: [] for fmt in formats}
            labels = []
            for x, y in dataset:
                labels.append(np.asarray(y))
                for fmt in formats:
                    outputs[fmt].append(np.asarray(self.predictor(fmt)(x)))
            return {fmt: float(score(np.concatenate(outputs[fmt]), np.concatenate(labels)))
                    for fmt in formats}
        correct = dict.fromkeys(formats, 0)
        total = 0
        for x, y in dataset:
            for fmt in formats:
                hits, counted = masked_accuracy(self.predictor(fmt)(x), y)
                correct[fmt] += hits
            total += counted
        return {fmt: correct[fmt] / max(total, 1) for fmt in formats}

    def _measured_formats(self, probe):
        formats = ["keras"] + [f for f in self.exporter.paths if f != "keras"]
        return [f for f in formats if self._runs(f, probe)]

    def _runs(self, fmt, probe):
        """Whether a format runs here; notes why not (e.g. a TFLite model
        with TF select ops needs the Flex delegate, which the interpreter in
        the `tensorflow` package lacks)."""
        try:
            self.predictor(fmt)(repeat_to(probe, 1))
            return True
        except KdplugError as e:
            note = f"{fmt}: not measured: {e}"
            if note not in self.exporter.notes:
                self.exporter.notes.append(note)
            return False

    def _path(self, fmt):
        if fmt not in self.exporter.paths:
            raise KdplugError(f"{fmt!r} was not exported; call export() first")
        return self.exporter.paths[fmt]

    def _tensors(self, features):
        return {k: tf.convert_to_tensor(features[k], tf.int32)
                for k in self.exporter.input_keys}



def tflite_predictor(path, input_keys, num_threads=None):
    """A function `features -> logits (numpy)` over a TFLite file.

    The interpreter is resized (`resize_tensor_input`) whenever the batch
    shape changes, so any batch size and (for a dynamic export) sequence
    length runs.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tf.lite.Interpreter's deprecation notice
        interpreter = tf.lite.Interpreter(model_path=path, num_threads=num_threads)
    runner = interpreter.get_signature_runner(SIGNATURE)
    inputs = {name: d["index"] for name, d in runner.get_input_details().items()}
    missing = set(inputs) - set(input_keys)
    if missing:
        raise KdplugError(f"{path} expects inputs {sorted(inputs)}, not {list(input_keys)}")
    output = next(iter(runner.get_output_details().values()))["index"]
    shapes = {}

    def predict(features):
        arrays = {k: np.asarray(features[k], np.int32) for k in inputs}
        try:
            if shapes != {k: a.shape for k, a in arrays.items()}:
                for k, a in arrays.items():
                    interpreter.resize_tensor_input(inputs[k], a.shape, strict=False)
                interpreter.allocate_tensors()
                shapes.clear()
                shapes.update({k: a.shape for k, a in arrays.items()})
            for k, a in arrays.items():
                interpreter.set_tensor(inputs[k], a)
            interpreter.invoke()
        except RuntimeError as e:
            shapes.clear()
            raise KdplugError(
                f"{os.path.basename(path)} cannot run in this TFLite interpreter: "
                f"{str(e).splitlines()[0][:300]}"
            ) from None
        return interpreter.get_tensor(output).copy()

    return predict


def preset_predictor(path, input_keys):
    """A function `features -> logits (numpy)` over a keras-hub preset
    folder, reloaded with `keras_hub.models.TextClassifier.from_preset` and
    called on token ids (its preprocessor is what `predict()` applies to
    strings)."""
    task = preset_export.load_preset(path)
    names = list(task.input) if isinstance(task.input, dict) else list(input_keys)
    forward = tf.function(lambda x: task(x, training=False), reduce_retracing=True)

    def predict(features):  # keeps `task` alive
        return forward({k: tf.convert_to_tensor(features[k], tf.int32)
                        for k in names}).numpy()

    return predict


def first_features(features, n):
    """Up to `n` examples' features (a dict of numpy arrays) from a dict of
    arrays or a dataset of `(features, labels)` batches."""
    if isinstance(features, dict):
        return {k: np.asarray(v)[:n] for k, v in features.items()}
    parts, count = [], 0
    for batch in features:
        x = batch[0] if isinstance(batch, (tuple, list)) else batch
        parts.append({k: np.asarray(v) for k, v in x.items()})
        count += len(next(iter(parts[-1].values())))
        if count >= n:
            break
    if not parts:
        raise KdplugError("no examples to measure latency on")
    return {k: np.concatenate([p[k] for p in parts])[:n] for k in parts[0]}


def repeat_to(features, n):
    """The examples repeated (cyclically) to exactly `n` rows."""
    have = len(next(iter(features.values())))
    rows = np.arange(n) % have
    return {k: v[rows] for k, v in features.items()}
