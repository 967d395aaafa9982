"""Exporting a trained student for serving, and measuring the exports."""

import os
import shutil
import warnings

import keras
import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug import storage
from kdplug.data.text_encoder import TextEncoder
from kdplug.errors import KdplugError
from kdplug.evaluation import preset_export
from kdplug.evaluation.measure import forward_function
from kdplug.evaluation.measure import masked_accuracy
from kdplug.evaluation.measure import time_ms
from kdplug.storage import tree_size

SIGNATURE = "serving_default"
# The SavedModel's second signature: raw strings in, logits out.
TEXT_SIGNATURE = "serve_text"
PRESET = "keras_hub_preset"
# The formats written when none are named (`export()`, `run()`).
DEFAULT_FORMATS = ("keras", "saved_model", "tflite_float32", "tflite_int8")
# Every known format: the defaults plus the keras-hub preset folder
# (BERT-family students only, and it needs the tokenizer), written only
# when asked for.
FORMATS = DEFAULT_FORMATS + (PRESET,)
FILENAMES = {
    "keras": "student.keras",
    "saved_model": "saved_model",
    "tflite_float32": "student_float32.tflite",
    "tflite_int8": "student_int8.tflite",
    PRESET: "keras_hub_preset",
}
# The tokenizer's vocabulary, one token a line, beside the TFLite files
# (TFLite takes token ids: encode text with it, see `vocab_file`).
VOCAB_FILE = "vocab.txt"
TFLITE_FORMATS = ("tflite_float32", "tflite_int8")


class StudentExporter:
    """Exports a student as `.keras`, TF SavedModel, TFLite and a keras-hub
    preset, and measures every export's size, CPU latency and accuracy.

    - `keras`: `model.save()`; reload with `keras.saving.load_model`.
    - `saved_model`: a TF SavedModel (`keras.export.ExportArchive`, as
      `model.export(format="tf_saved_model")`) with the serving signature
      `serving_default`, taking the model's `input_keys` (for BERT
      students `token_ids`, `segment_ids`, `padding_mask`) as int32
      `[batch, sequence_length]` and returning `output_0`, the logits.
      Serve it with TF Serving or `tf.saved_model.load(path).serve(...)`.
      With a `tokenizer` (and a student reading WordPiece ids), a second
      signature `serve_text` takes `text`, a 1-D string tensor, tokenises
      and packs it in the graph like `TextEncoder` and returns `output_0`;
      its tokenizer ops are TF Text's, so loading the SavedModel then needs
      `import tensorflow_text` (installed with keras-hub) first.
    - `keras_hub_preset` (asked for only, needs `tokenizer`): a keras-hub
      preset folder with the preprocessor and `labels.json`, loadable with
      `keras_hub.models.TextClassifier.from_preset(dir)` without kdplug and
      predicting from raw strings (`kdplug.evaluation.preset_export`). Only
      BERT-family students (a `BertClassifier`, or a student holding a
      keras-hub `TextClassifier` as `task`); others are refused.
    - `tflite_float32`: `tf.lite.TFLiteConverter.from_saved_model`.
    - `tflite_int8`: the same with `optimizations=[tf.lite.Optimize.DEFAULT]`
      and no representative dataset, i.e. post-training *dynamic-range*
      quantization: weights stored as int8 (about 4x smaller), activations
      stay float and are quantized on the fly. No calibration data needed.

    TFLite models are converted from the SavedModel, so the SavedModel is
    always written when a TFLite format is asked for. When a model uses an op
    TFLite's builtins lack, the conversion is retried with TF select ops and
    `notes` says so. Keras' LSTM with a dynamic batch is such a case (its
    `TensorList` ops): the file is written, but running it needs the Flex
    delegate, which the interpreter in the `tensorflow` pip package does not
    load, so those formats are left out of the measurements (with a note).
    BERT-family students convert to builtins only.

    With a `tokenizer`, the TFLite formats get `vocab.txt` beside them (the
    tokenizer's vocabulary; `vocab` in `run()`'s report).

    Only the student is exported: projections and heads that only training
    needs live in the loss terms and the `Distiller`, not in the student.

    Args:
        model: the student, a Keras model whose `call` takes a dict of int32
            tensors and returns logits.
        sequence_length: int or None. The exported sequence axis; None keeps it
            dynamic. The batch axis is always dynamic.
        input_keys: the input names; defaults to `model.input_keys`, else
            BERT's `token_ids`, `segment_ids`, `padding_mask`.
        num_threads: int or None. Threads of the TFLite interpreter (None: its
            default).
        tokenizer: the run's keras-hub tokenizer (e.g. a `BertTokenizer`), or
            None: then no `serve_text` signature, no `vocab.txt`, and the
            `keras_hub_preset` format is refused.
        label_names: class names in output order (written into the preset
            folder as `labels.json`), or None.

    Examples:

    ```python
    exporter = StudentExporter(student, sequence_length=48)
    paths = exporter.export("runs/sst2/export")
    exporter.size_bytes()["tflite_int8"]
    exporter.latency_ms(test_ds)["tflite_int8"]["batch_32"]["median"]
    exporter.accuracy(test_ds)["tflite_int8"]
    report = exporter.run("runs/sst2/export", test_ds)  # all of the above
    ```
    """

    def __init__(self, model, sequence_length=None, input_keys=None, num_threads=None,
                 tokenizer=None, label_names=None):
        self.model = model
        self.tokenizer = tokenizer
        self.label_names = None if label_names is None else list(label_names)
        self.vocab = None  # the path of vocab.txt once written
        self.sequence_length = None if sequence_length is None else int(sequence_length)
        self.input_keys = tuple(
            input_keys or getattr(model, "input_keys", None) or keys.TOKEN_INPUTS
        )
        self.num_threads = num_threads
        self.paths = {}
        self.notes = []
        self._predictors = {}

    def input_signature(self):
        """The serving signature: one dict of int32 `TensorSpec`s."""
        shape = [None, self.sequence_length]
        return [{k: tf.TensorSpec(shape, tf.int32, name=k) for k in self.input_keys}]

    def export(self, out_dir, formats=DEFAULT_FORMATS, keras_file=None):
        """Writes the requested formats into `out_dir`; returns
        `{format: path}` (also kept in `self.paths`).

        Every file and folder is written under a temporary name beside
        its final one and renamed once complete (`kdplug.storage`), so an
        export killed half-way leaves no final name (and `kdplug export`
        writes it again rather than keeping half of it).

        Nothing is stored twice: the TFLite converter's SavedModel is
        written to a temporary folder and removed unless `saved_model` is
        asked for, and with `keras_file` (the student already saved, e.g.
        the run's `student.keras`) the `keras` export is a hard link to it
        (a copy where the file system has no links); the preset folder holds
        one copy of the weights (backbone in `model.weights.h5`, head in
        `task.weights.h5`), and `vocab.txt` is a hard link to the preset's
        vocabulary when both are written.

        A `keras_hub_preset` this student or exporter cannot write (not a
        keras-hub model, no tokenizer) is refused before anything is
        written."""
        unknown = sorted(set(formats) - set(FORMATS))
        if unknown:
            raise KdplugError(
                f"unknown export format(s) {unknown}; known: {list(FORMATS)}")
        wanted = set(formats)
        if PRESET in wanted:
            preset_export.check_presettable(self.model)
            if self.tokenizer is None:
                raise KdplugError(
                    f"the {PRESET} export needs the tokenizer: "
                    "StudentExporter(model, sequence_length, tokenizer=...)")
        os.makedirs(out_dir, exist_ok=True)
        storage.remove_stale_temporaries(out_dir)  # a killed export's
        self._predictors = {}
        paths = {f: os.path.join(out_dir, FILENAMES[f]) for f in FORMATS}
        if "keras" in wanted:
            self._save_keras(paths["keras"], keras_file)
            self.paths["keras"] = paths["keras"]
        if PRESET in wanted:
            self.paths[PRESET] = preset_export.save_preset(
                self.model, paths[PRESET], self.tokenizer, self.sequence_length,
                self.label_names)
        if wanted & {"saved_model", *TFLITE_FORMATS}:
            saved_model = paths["saved_model"]
            if "saved_model" in wanted:
                with storage.atomic_folder(saved_model) as tmp:
                    self._write_saved_model(tmp, text=True)
                self.paths["saved_model"] = saved_model
            else:  # only for the converter: ids only, removed afterwards
                saved_model = storage.temporary_name(saved_model)
                self._write_saved_model(saved_model, text=False)
            try:
                for fmt, quantize in (("tflite_float32", False), ("tflite_int8", True)):
                    if fmt in wanted:
                        blob = self._convert(saved_model, quantize)
                        with storage.atomic_write(paths[fmt], "wb") as f:
                            f.write(blob)
                        self.paths[fmt] = paths[fmt]
            finally:
                if "saved_model" not in wanted:
                    shutil.rmtree(saved_model, ignore_errors=True)
        if wanted & set(TFLITE_FORMATS) and self._reads_token_ids():
            self.vocab = self._write_vocab(os.path.join(out_dir, VOCAB_FILE))
        return {f: self.paths[f] for f in FORMATS if f in self.paths}

    def _reads_token_ids(self):
        """Whether the student reads what `TextEncoder` makes of single texts
        with this exporter's tokenizer (WordPiece ids)."""
        return (self.tokenizer is not None
                and set(self.input_keys) <= set(keys.TOKEN_INPUTS))

    def _write_saved_model(self, path, text):
        """The SavedModel: `serving_default` on ids; with `text` (and a
        tokenizer the student reads), also `serve_text` on strings."""
        reason = None
        if text and self.tokenizer is not None:
            if not self._reads_token_ids():
                reason = (f"the student reads {list(self.input_keys)}, not the "
                          "tokenizer's ids")
            elif self.sequence_length is None:
                reason = "no sequence_length to pack texts to"
        if not text or self.tokenizer is None or reason:
            if reason:
                note = f"saved_model: no {TEXT_SIGNATURE} signature: {reason}"
                if note not in self.notes:
                    self.notes.append(note)
            self.model.export(path, format="tf_saved_model",
                              input_signature=self.input_signature(), verbose=False)
            return
        encoder = TextEncoder(self.tokenizer, self.sequence_length)
        model, input_keys = self.model, self.input_keys

        def serve_text(text):
            features = encoder(text)
            return model({k: features[k] for k in input_keys}, training=False)

        archive = keras.export.ExportArchive()
        # The first endpoint is also `serving_default` (as `model.export`).
        archive.track_and_add_endpoint("serve", self.model, self.input_signature())
        archive.add_endpoint(TEXT_SIGNATURE, serve_text,
                             input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        archive.write_out(path, verbose=False)

    def _write_vocab(self, path):
        """`vocab.txt`: a hard link to the preset's vocabulary when the
        preset was written (one copy), else the tokenizer's vocabulary."""
        if os.path.exists(path):
            os.remove(path)
        preset_vocab = os.path.join(self.paths.get(PRESET, ""), "assets", "tokenizer",
                                    "vocabulary.txt")
        vocabulary = "\n".join(self.tokenizer.get_vocabulary())
        if PRESET in self.paths and os.path.isfile(preset_vocab):
            with open(preset_vocab, encoding="utf-8") as f:
                same = f.read().rstrip("\n") == vocabulary
            if same:
                try:
                    os.link(preset_vocab, path)
                    return path
                except OSError:
                    pass
        storage.write_text(path, vocabulary + "\n")
        return path

    def vocab_file(self):
        """`{"path", "lowercase", "sequence_length"}` of `vocab.txt` (what
        encodes text for the TFLite files), or None when not written."""
        if self.vocab is None:
            return None
        return {"path": self.vocab,
                "lowercase": bool(getattr(self.tokenizer, "lowercase", False)),
                "sequence_length": self.sequence_length}

    def _save_keras(self, path, keras_file):
        """The `.keras` export: a hard link to `keras_file` when given (a
        copy across file systems), else the model saved; either way under a
        temporary name first (`path` is never half a file)."""
        if keras_file is None:
            storage.save_model(self.model, path)
            return
        tmp = storage.temporary_name(path)
        try:
            try:
                os.link(keras_file, tmp)
            except OSError:
                shutil.copyfile(keras_file, tmp)
            storage.commit(tmp, path)
        except OSError as e:
            raise storage.write_failure(path, e) from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    def _convert(self, saved_model, quantize):
        def convert(select_ops):
            converter = tf.lite.TFLiteConverter.from_saved_model(
                saved_model, signature_keys=[SIGNATURE]
            )
            if quantize:
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
            if select_ops:
                converter.target_spec.supported_ops = [
                    tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS
                ]
            return converter.convert()

        try:
            return convert(select_ops=False)
        except Exception as e:  # the converter raises several error types
            note = (f"{'int8' if quantize else 'float32'} TFLite conversion needed "
                    f"TF select ops ({type(e).__name__})")
            if note not in self.notes:
                self.notes.append(note)
            return convert(select_ops=True)

    def size_bytes(self):
        """`{format: bytes on disk}` of every export (a SavedModel is a folder:
        the sum of its files)."""
        return {fmt: tree_size(path) for fmt, path in self.paths.items()}

    def predictor(self, fmt):
        """A function `features -> logits (numpy)` running one format.

        `"keras"` runs the in-memory model (in a `tf.function`), the others
        the exported files.
        """
        if fmt in self._predictors:
            return self._predictors[fmt]
        if fmt == "keras":  # the trace the run's evaluation made, if any
            forward = forward_function(self.model)

            def predict(features):
                return forward(self._tensors(features)).numpy()
        elif fmt == "saved_model":
            loaded = tf.saved_model.load(self._path(fmt))

            def predict(features):  # keeps `loaded` (the variables) alive
                out = loaded.signatures[SIGNATURE](**self._tensors(features))
                return next(iter(out.values())).numpy()
        elif fmt in TFLITE_FORMATS:
            predict = tflite_predictor(self._path(fmt), self.input_keys, self.num_threads)
        elif fmt == PRESET:
            predict = preset_predictor(self._path(fmt), self.input_keys)
        else:
            raise KdplugError(f"unknown export format {fmt!r}; known: {list(FORMATS)}")
        self._predictors[fmt] = predict
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

    def run(self, out_dir, dataset, formats=DEFAULT_FORMATS, batch_sizes=(1, 32), runs=20,
            metric=None, keras_file=None):
        """Exports, then measures: returns the report's `export` section,
        `{"files", "size_bytes", "latency_ms", "accuracy", "notes"}` (and
        `vocab`, `vocab_file()`, when `vocab.txt` was written); with
        `metric=(name, fn)` (see `accuracy`'s `score`) that metric under
        its name instead of accuracy."""
        files = self.export(out_dir, formats, keras_file=keras_file)
        name, score = metric or ("accuracy", None)
        report = {
            "files": files,
            "size_bytes": self.size_bytes(),
            "latency_ms": self.latency_ms(dataset, batch_sizes=batch_sizes, runs=runs),
            name: self.accuracy(dataset, score=score),
            "notes": list(self.notes),
        }
        if self.vocab is not None:
            report["vocab"] = self.vocab_file()
        return report

    def _measured_formats(self, probe):
        formats = ["keras"] + [f for f in self.paths if f != "keras"]
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
            if note not in self.notes:
                self.notes.append(note)
            return False

    def _path(self, fmt):
        if fmt not in self.paths:
            raise KdplugError(f"{fmt!r} was not exported; call export() first")
        return self.paths[fmt]

    def _tensors(self, features):
        return {k: tf.convert_to_tensor(features[k], tf.int32) for k in self.input_keys}


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
