"""Exporting a trained student for serving (measuring the exports:
`kdplug.evaluation.export_measure`)."""

import os
import shutil

import keras
import tensorflow as tf

from kdplug import keys
from kdplug import storage
from kdplug.data.text_encoder import TextEncoder
from kdplug.errors import KdplugError
from kdplug.evaluation import preset_export
from kdplug.run_files import STUDENT_FILE

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
    "keras": STUDENT_FILE,
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
    preset (`kdplug.evaluation.export_measure.ExportMeasurer` measures every
    export's size, CPU latency and accuracy).

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
    tokenizer's vocabulary; `vocab` in `export_and_measure`'s report).

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
    paths["tflite_int8"]  # "runs/sst2/export/student_int8.tflite"
    # exported and measured: the report's `export` section
    report = export_and_measure(exporter, "runs/sst2/export", test_ds)
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
