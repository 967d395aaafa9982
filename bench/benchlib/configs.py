"""The configs a bench runs: the bundled `configs/*.yaml` as documents to
change, written and validated, and the tiny stand-ins of a smoke run."""

import os

import yaml

from .paths import ROOT


def load_base(name):
    """`configs/<name>.yaml` as a document (nested dicts) to change.

    Args:
        name: the bundled config, without `.yaml`.
    """
    with open(os.path.join(ROOT, "configs", f"{name}.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def write_config(doc, path):
    """Writes the config document `doc` to `path` (its folder made) and
    returns `path`.

    Args:
        doc: the config document.
        path: the YAML file.
    """
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return path


def validate_config(path):
    """Loads the config at `path` as `kdplug run` would: raises on any
    field kdplug refuses (a `--dry-run` checks every config so).

    Args:
        path: the YAML file.
    """
    from kdplug.config import load_config

    load_config(path)


class SmokeSetup:
    """A tiny keras-hub preset and toy data standing in for MiniLM-L6 and
    movie_snippets (`--smoke`): the same code paths in about a minute.

    Args:
        folder: where the preset and the data are written (kept when they
            exist).
    """

    def __init__(self, folder):
        from kdplug import testing

        os.makedirs(folder, exist_ok=True)
        self.preset = os.path.join(folder, "teacher")
        if not os.path.isdir(self.preset):
            testing.write_tiny_preset(self.preset, num_layers=4, hidden_dim=16)
        self.data = os.path.join(folder, "toy.tsv")
        if not os.path.isfile(self.data):
            testing.write_toy_tsv(self.data, num_examples=120)

    def apply(self, doc):
        """Points the config document `doc` at the tiny preset and the toy
        data, and shrinks its student and batches to match.

        Args:
            doc: the config document, changed in place.
        """
        doc["data"].update(path=self.data, sequence_length=16)
        doc["teacher"] = {"source": self.preset, "dropout": 0.0, "finetune": {
            "epochs": 1, "batch_size": 16, "learning_rate": 3e-3}}
        doc["training"].update(batch_size=16, learning_rate=3e-3, jit_compile=False,
                               verbose=0)
        student = doc.get("student") or {}
        if student.get("kind") == "narrow":
            student.update(num_layers=2, hidden_dim=12, intermediate_dim=24,
                           num_heads=2)
        if student.get("kind") == "bottleneck":
            student.update(intra_dim=8, num_heads=2, intermediate_dim=16,
                           embedding_dim=8)
        if student.get("kind") == "bilstm":
            student.update(embedding_dim=8, lstm_units=8, hidden_dim=16)
        if doc["method"]["name"] == "tinybert":
            doc["method"]["head_reduction"] = None
