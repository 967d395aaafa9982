"""Bring your own model, checked on the real teacher (issue #16).

    python bench/byom.py [--quickstart runs/quickstart] [--write-docs [PATH]]
    python bench/byom.py --render-only --write-docs   # the section from the stored results

1. The quickstart run (`configs/quickstart.yaml`: MiniLM-L6 fine-tuned 1
   epoch, kd into its layers 1, 3, 5) is run when its folder is missing; its
   run folder's size is measured (issue #16 asks for less than 100 MB).
2. Its fine-tuned teacher (from kdplug's teacher cache, `TrainedRun`) is
   saved as a keras-hub `BertTextClassifier` preset with its preprocessor,
   the way a user saves a fine-tuned model (`save_to_preset`).
3. A fresh process that imports keras-hub alone measures that preset's
   test accuracy from raw strings.
4. `kdplug run` distils from that preset with **no `teacher.finetune`**
   (the quickstart's student and budget otherwise) and exports the student
   as a keras-hub preset (`export.formats: [keras_hub_preset]`).
5. A fresh process that imports keras-hub alone measures the exported
   student preset's test accuracy.

It prints both pairs of accuracies side by side (the run's own teacher
accuracy vs keras-hub's; the run's student accuracy vs keras-hub's on the
exported preset), writes them to `bench/results/byom.json` and, with
`--write-docs`, the `byom` section of `docs/results.md`.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import yaml

from benchlib import RESULTS_PAGE  # bench/ is the script's folder
from benchlib import ROOT
from benchlib import add_measurement_arguments
from benchlib import measurement_section
from kdplug import storage
from kdplug.run_files import EXPORT
from kdplug.run_files import METRICS
from kdplug.storage import tree_size


# Runs in a process that never imports kdplug.
KERAS_HUB_ACCURACY = """
import csv, json, sys
import keras_hub, numpy as np
folder, data = sys.argv[1], sys.argv[2]
with open(data, encoding="utf-8") as f:
    rows = [r for r in csv.DictReader(f, delimiter="\\t") if r["split"] == "test"]
model = keras_hub.models.TextClassifier.from_preset(folder)
logits = model.predict([r["text"] for r in rows], batch_size=64, verbose=0)
hits = np.argmax(logits, -1) == np.array([int(r["label"]) for r in rows])
print(json.dumps({"accuracy": float(hits.mean()), "examples": len(rows),
                  "kdplug_imported": any(m.split(".")[0] == "kdplug" for m in sys.modules),
                  "sequence_length": model.preprocessor.sequence_length}))
"""


def kdplug(*args):
    subprocess.run([sys.executable, "-m", "kdplug.cli", *args], check=True, cwd=ROOT)


def keras_hub_accuracy(folder, data):
    """Test accuracy of a preset folder measured with keras-hub alone."""
    done = subprocess.run([sys.executable, "-c", KERAS_HUB_ACCURACY, folder, data],
                          capture_output=True, text=True, check=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["kdplug_imported"]
    return result


def save_teacher_preset(run_dir, folder):
    """The quickstart's fine-tuned teacher as a keras-hub preset folder."""
    import keras_hub

    from kdplug.run.trained_run import TrainedRun

    run = TrainedRun(run_dir, roles=("teacher",))
    teacher = run.model("teacher")
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer=run.models.encoder.tokenizer,
        sequence_length=run.config.data.sequence_length)
    teacher.to_task(preprocessor).save_to_preset(folder)
    return run.config


def measure(quickstart):
    """Runs the five steps and returns what `bench/results/byom.json` keeps.

    Args:
        quickstart: the quickstart's run folder (run first when missing).
    """
    seconds = {}
    start = time.perf_counter()
    if not os.path.isfile(os.path.join(quickstart, METRICS)):
        kdplug("run", os.path.join(ROOT, "configs", "quickstart.yaml"))
    seconds["quickstart"] = time.perf_counter() - start
    quick = storage.read_json(os.path.join(quickstart, METRICS))
    work = os.path.join(ROOT, "runs", "byom")
    teacher_dir = os.path.join(work, "teacher-preset")
    os.makedirs(work, exist_ok=True)
    config = save_teacher_preset(quickstart, teacher_dir)
    data = config.resolve_path(config.data.path)
    start = time.perf_counter()
    teacher_hub = keras_hub_accuracy(teacher_dir, data)
    seconds["teacher_keras_hub_eval"] = time.perf_counter() - start
    with open(os.path.join(ROOT, "configs", "quickstart.yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    doc.update(name="byom", output_dir=os.path.join(work, "run"))
    doc["data"]["path"] = data
    doc["teacher"] = {"source": teacher_dir}  # no finetune: used as it is
    doc["export"] = {"formats": ["keras_hub_preset"], "latency_batch_sizes": [1]}
    path = os.path.join(work, "byom.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f)
    start = time.perf_counter()
    kdplug("run", path, "--fresh")
    seconds["distil_from_preset"] = time.perf_counter() - start
    report = storage.read_json(os.path.join(work, "run", METRICS))
    student_dir = os.path.join(work, "run", EXPORT, "keras_hub_preset")
    student_hub = keras_hub_accuracy(student_dir, data)
    return {
        "quickstart_folder_mb": tree_size(quickstart) / 2**20,
        "quickstart_teacher": quick["teacher"]["accuracy"],
        "teacher_in_run": report["teacher"]["accuracy"],
        "teacher_keras_hub": teacher_hub["accuracy"],
        "student_in_run": report["student"]["accuracy"],
        "student_keras_hub": student_hub["accuracy"],
        "test_examples": teacher_hub["examples"],
        "student_preset_mb": tree_size(student_dir) / 2**20,
        "seconds": seconds,
    }


def render(results):
    """The `byom` section from the stored results.

    Args:
        results: `bench/results/byom.json`'s content.
    """
    return "\n".join([
        "## Bring your own model: a keras-hub preset teacher, a keras-hub preset student",
        "",
        "`python bench/byom.py`: the quickstart's fine-tuned MiniLM-L6 "
        "saved with `save_to_preset`, distilled from that folder with no "
        "`teacher.finetune`, the student exported as a keras-hub preset; "
        "accuracies measured by the run and, in a process that never imports "
        f"kdplug, by keras-hub alone (test split, {results['test_examples']} sentences).",
        "",
        "| model | in the kdplug run | keras-hub alone |",
        "|---|---|---|",
        f"| teacher (preset, head kept) | {results['teacher_in_run']:.4f} | "
        f"{results['teacher_keras_hub']:.4f} |",
        f"| student (exported preset, {results['student_preset_mb']:.1f} MB) | "
        f"{results['student_in_run']:.4f} | {results['student_keras_hub']:.4f} |",
        "",
        f"The quickstart run folder: {results['quickstart_folder_mb']:.1f} MB "
        f"(teacher {results['quickstart_teacher']:.4f}).",
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quickstart", default=os.path.join(ROOT, "runs", "quickstart"))
    add_measurement_arguments(parser, "byom", RESULTS_PAGE)
    args = parser.parse_args(argv)
    measurement_section(args, "byom", lambda: measure(args.quickstart), render)


if __name__ == "__main__":
    main()
