"""A complete toy experiment config (tiny teacher preset + toy data) for
tests and smoke runs of `kdplug run`."""

import os

import yaml

from kdplug.testing import write_tiny_preset
from kdplug.testing import write_toy_tsv


def write_toy_config(folder, method, num_examples=240, num_layers=2,
                     **sections):
    """Writes a tiny keras-hub teacher preset, a toy TSV and a config using
    them into `folder`; returns the config's path.

    Defaults: sequence length 16; teacher fine-tuned 1 epoch (batch 16,
    learning rate 3e-3; with `teacher={"finetune": None}` the teacher preset
    is a keras-hub classifier with a random head, used as it is); training 2 epochs (batch 16, learning rate 3e-3,
    no XLA, silent); latency from 2 timed passes; runs under `folder/runs/toy`.

    Args:
        folder: str or path; created if missing.
        method: the `method:` section, e.g. `{"name": "kd"}`.
        num_examples: int. Toy examples (split 70/15/15).
        num_layers: int. The teacher's transformer layers.
        **sections: other top-level sections; a dict is merged into the
            default section of that name (e.g. `training={"epochs": 3}`),
            anything else replaces it (e.g. `export=False`).

    Examples:

    ```python
    path = write_toy_config(tmp_path, {"name": "fastbert", "branch_dim": 8},
                            student={"kind": "truncated", "layers": [1]})
    report = Experiment(load_config(path)).run()
    ```
    """
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    # Without fine-tuning, the teacher is a classifier used as it is (a
    # backbone's new head would be an error); its head is random.
    as_is = "finetune" in sections.get("teacher", {}) and (
        sections["teacher"]["finetune"] is None)
    # Written only when the sections do not name their own.
    preset = sections.get("teacher", {}).get("source") or write_tiny_preset(
        os.path.join(folder, "teacher"), num_layers=num_layers, classifier=as_is)
    data = sections.get("data", {}).get("path") or write_toy_tsv(
        os.path.join(folder, "toy.tsv"), num_examples=num_examples)
    doc = {
        "name": "toy",
        "output_dir": os.path.join(folder, "runs", "{name}"),
        "data": {"path": data, "sequence_length": 16},
        "teacher": {"source": preset, "finetune": {"epochs": 1, "batch_size": 16,
                                                   "learning_rate": 3e-3}},
        "method": dict(method),
        "training": {"epochs": 2, "batch_size": 16, "learning_rate": 3e-3,
                     "jit_compile": False, "verbose": 0},
        # a toy model's latency means nothing: two timed passes, not 30
        "evaluation": {"latency_runs": 2},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        else:
            doc[key] = value
    path = os.path.join(folder, "toy.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f)
    return path


def shared_toy_teacher(folder, num_examples=240):
    """Sections for toy runs that share one teacher preset, one data file and
    one kdplug cache (`{"cache", "teacher", "data"}`): a module fixture
    writes them once and each test points `KDPLUG_CACHE_DIR` at `cache`, so
    the teacher is fine-tuned once and later runs load it (the fine-tuning
    cache key hashes the preset's files and the data's content: configs
    that write their own copies of the same preset and data share the
    entry too, within one process).

    Examples:

    ```python
    shared = shared_toy_teacher(tmp_path_factory.mktemp("teacher"))
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(shared["cache"]))
    write_toy_config(folder, {"name": "kd"}, teacher=shared["teacher"],
                     data=shared["data"])
    ```
    """
    folder = str(folder)
    return {"cache": os.path.join(folder, "cache"),
            "teacher": {"source": write_tiny_preset(os.path.join(folder, "teacher"),
                                                    num_layers=2)},
            "data": {"path": write_toy_tsv(os.path.join(folder, "toy.tsv"),
                                           num_examples=num_examples)}}
