"""`Experiment(config, data=...)`: a run on in-memory data (the config's
data section says how to read it), its content fingerprint in the run's
settings and the teacher's cache key, and the commands that would need the
data it did not keep."""

import csv
import json

import pytest

from kdplug import ConfigError
from kdplug import KdplugError
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.config.sections import FinetuneConfig
from kdplug.data.examples import splits_fingerprint
from kdplug.data.readers import examples_from_dataset
from kdplug.run.experiment import Experiment
from kdplug.teacher.finetune import TeacherFinetuner
from kdplug.testing.toy_config import write_toy_config


def toy_splits(tsv):
    """The toy TSV's rows as a dict of splits of columns (what a user would
    hold in memory: a `DatasetDict` reads the same way)."""
    splits = {}
    with open(tsv, encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            part = splits.setdefault(row["split"], {"text": [], "label": []})
            part["text"].append(row["text"])
            part["label"].append(int(row["label"]))
    return splits


@pytest.fixture
def toy(tmp_path):
    """A toy kd config (a classifier teacher used as it is, one epoch) and
    its data, in memory."""
    path = write_toy_config(
        tmp_path, {"name": "kd"}, num_examples=120, teacher={"finetune": None},
        student={"kind": "truncated", "layers": [1]}, training={"epochs": 1},
        export=False)
    return path, toy_splits(tmp_path / "toy.tsv")


@pytest.mark.slow
def test_run_reads_the_data_and_records_its_fingerprint(toy, tmp_path, capsys):
    path, data = toy
    report = Experiment(load_config(path), data=data).run()
    assert report["test_examples"] == len(data["test"]["text"])
    assert report["data"] == "<in memory>"
    run_dir = tmp_path / "runs" / "toy"
    saved = (run_dir / "config.yaml").read_text()
    assert "path: <in memory>" in saved
    expected = splits_fingerprint(examples_from_dataset(data, test_split="test",
                                                        validation_split="dev"))
    settings = json.loads((run_dir / "settings.json").read_text())
    assert settings["settings"]["data_file_content"] == expected

    # the same data: the finished stage is reused; other data: refused
    again = Experiment(load_config(path), data=data).run()
    assert again["history"] == report["history"]
    changed = {**data, "train": {"text": data["train"]["text"][1:],
                                 "label": data["train"]["label"][1:]}}
    with pytest.raises(ConfigError, match="data_file_content"):
        Experiment(load_config(path), data=changed).run()

    # the run folder keeps no data: what needs it says so
    assert main(["evaluate", str(run_dir), "--split", "test"]) == 2
    assert "read in-memory data" in capsys.readouterr().err


def test_the_teacher_cache_key_follows_the_data(toy):
    path, data = toy
    config = load_config(path)
    config.teacher.finetune = FinetuneConfig()  # fine-tuning with its defaults
    one = Experiment(config, data=data)
    other = Experiment(config, data={**data, "test": data["dev"]})
    source = config.teacher.source

    def key(experiment):
        return TeacherFinetuner(experiment.config, source,
                                data_fingerprint=experiment.data_fingerprint).key()

    assert one.data_fingerprint != other.data_fingerprint
    assert key(one) != key(other)
    assert key(one) == key(Experiment(config, data=data))
    assert config.data.path != "<in memory>"  # the caller's config is not changed


def test_errors_name_the_row_or_the_method(toy):
    path, data = toy
    bad = {**data, "train": {"text": data["train"]["text"], "label":
                             data["train"]["label"][:-1] + ["x"]}}
    with pytest.raises(KdplugError, match="'x'"):
        Experiment(load_config(path), data=bad)
