"""Re-exporting a finished run's student (`kdplug export`).

Examples:

```python
run = TrainedRun("runs/quickstart")
result = export_run(run, ["tflite_int8"])
result["written"]  # {"tflite_int8": "runs/quickstart/export/student_int8.tflite"}
result["kept"]     # formats whose file was already there
```
"""

import os

from kdplug import storage
from kdplug.data.label_map import LabelMap
from kdplug.errors import KdplugError
from kdplug.errors import did_you_mean
from kdplug.run_files import EXPORT
from kdplug.run_files import EXPORT_LABELS
from kdplug.run_files import LABEL_MAP


def check_formats(formats, flag="--format"):
    """The export formats asked for, each once, in order; `KdplugError`
    naming `flag` for one that `kdplug.evaluation.export.FORMATS` (read
    now, so formats added by newer code or plugins count) does not list.

    Examples:

    ```python
    check_formats(["keras", "tflite_int8", "keras"])  # ["keras", "tflite_int8"]
    check_formats(["tflite"])  # KdplugError: --format: unknown export format ...
    ```
    """
    from kdplug.evaluation.export import FORMATS

    if not formats:
        raise KdplugError(f"{flag}: name at least one export format; known: "
                          f"{', '.join(FORMATS)}")
    for fmt in formats:
        if fmt not in FORMATS:
            raise KdplugError(
                f"{flag}: unknown export format {fmt!r}{did_you_mean(fmt, FORMATS)}; "
                f"known: {', '.join(FORMATS)}")
    return list(dict.fromkeys(formats))


def export_run(run, formats, output_dir=None):
    """Exports a finished run's student with `StudentExporter`, writing
    only what is not there yet.

    A format whose file (or folder) already exists in `output_dir` is kept
    as it is (remove it to export it again); the `keras` export is a hard
    link to the run's `student.keras` (a copy across file systems). A
    student of its own tokenizer (`student.kind: hub`) ships its inner
    model with that tokenizer, as `kdplug run` exports it (`serve_text` and
    the preset tokenise as the student was trained). When
    the run's classes have names, `labels.json` goes beside the exports
    (the run's `label_map.json`, as `kdplug run` writes
    `export/labels.json`); an equal one is left alone.

    Args:
        run: a `kdplug.run.trained_run.TrainedRun`.
        formats: export formats (`kdplug.evaluation.export.FORMATS`).
        output_dir: the folder (default `<run>/export`).

    Returns:
        `{"output_dir", "written": {format: path}, "kept": {format: path},
        "labels": path or None, "vocab": path or None, "notes": [...]}`
        (`vocab`: the tokenizer's `vocab.txt` the exporter wrote beside
        TFLite files; notes: e.g. TFLite conversions that needed TF select
        ops).
    """
    from kdplug.evaluation.export import FILENAMES
    from kdplug.evaluation.export import StudentExporter

    formats = check_formats(formats)
    output_dir = output_dir or os.path.join(run.run_dir, EXPORT)
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise KdplugError(f"{output_dir}: a file, not a folder (--output)")
    kept, wanted = {}, []
    for fmt in formats:
        path = os.path.join(output_dir, FILENAMES[fmt]) if fmt in FILENAMES else None
        if path is not None and os.path.exists(path):
            kept[fmt] = path
        else:
            wanted.append(fmt)
    written, notes, vocab = {}, [], None
    if wanted:
        from kdplug.models.keyed_inputs import KeyedInputs
        from kdplug.models.saving import load_model

        student, keras_file = load_model(run.student_file), run.student_file
        tokenizer = run.models.encoder.tokenizer
        if isinstance(student, KeyedInputs):  # the student's own tokenizer
            student, keras_file = student.model, None
            tokenizer = run.models.words.tokenizer
        exporter = StudentExporter(student, sequence_length=run.config.data.sequence_length,
                                   tokenizer=tokenizer, label_names=run.label_names)
        written = exporter.export(output_dir, tuple(wanted), keras_file=keras_file)
        notes = list(exporter.notes)
        vocab = getattr(exporter, "vocab", None)
    return {"output_dir": output_dir, "written": written, "kept": kept,
            "labels": _write_labels(run, output_dir), "vocab": vocab, "notes": notes}


def _write_labels(run, output_dir):
    """`<output_dir>/labels.json` for a run with class names (None without)."""
    names = run.label_names
    if names is None:
        return None
    labels = storage.read_json(os.path.join(run.run_dir, LABEL_MAP))
    if not labels or labels.get("names") != names:
        data = run.config.data
        labels = LabelMap(len(names), list(names), "names", "data.label_names",
                          data.label_column).to_json()
    path = os.path.join(output_dir, EXPORT_LABELS)
    if storage.read_json(path) != labels:
        os.makedirs(output_dir, exist_ok=True)
        storage.write_json(path, labels)
    return path
