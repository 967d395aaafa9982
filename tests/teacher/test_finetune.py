"""`TeacherFinetuner`: fine-tuned teachers cached as weights only, listed and
removed by `kdplug cache`, never cached when fine-tuning diverged, and
fine-tuned again when the cached file is damaged."""

import os

import h5py
import keras
import pytest

from kdplug import TrainingError
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.run.experiment import Experiment
from kdplug.storage import ENTRY_MARKER
from kdplug.teacher import cache_admin
from kdplug.teacher.objectives import ClassificationObjective
from kdplug.testing.toy_config import write_toy_config


def toy(tmp_path, **finetune):
    return write_toy_config(tmp_path, {"name": "kd"}, num_examples=64,
                            teacher={"finetune": {"epochs": 1, "batch_size": 16,
                                                  "learning_rate": 3e-3, **finetune}})


def teacher_entries():
    return cache_admin.list_entries(kinds=["teacher"])


@pytest.mark.slow
def test_fine_tuned_teacher_is_cached_listed_and_removed(tmp_path, capsys, kdplug_log):
    config = toy(tmp_path)
    info = Experiment(load_config(config)).finetune_teacher()
    assert info["cached"] is False and "resumed_at_epoch" not in info  # a whole fine-tuning
    [entry] = teacher_entries()
    assert entry["owned"] and entry["status"] == "ok"
    assert "validation accuracy" in entry["detail"]
    folder = entry["path"]
    assert os.path.isfile(os.path.join(folder, ENTRY_MARKER))
    with h5py.File(os.path.join(folder, "model.weights.h5")) as f:
        assert "optimizer" not in f  # weights only, no AdamW moments

    # A second run loads it; a damaged file is fine-tuned again (one warning).
    assert Experiment(load_config(config)).finetune_teacher()["cached"] is True
    with open(os.path.join(folder, "model.weights.h5"), "r+b") as f:
        f.truncate(1000)
    assert Experiment(load_config(config)).finetune_teacher()["cached"] is False
    assert any("do not load" in m and "fine-tuning again" in m for m in kdplug_log())
    assert Experiment(load_config(config)).finetune_teacher()["cached"] is True

    assert main(["cache", "ls"]) == 0
    out = capsys.readouterr().out
    assert f"teacher  {entry['key']}" in out and "1 entry" in out
    assert main(["cache", "rm", entry["key"][:6]]) == 0
    assert f"removed teacher {entry['key']}" in capsys.readouterr().out
    assert teacher_entries() == [] and not os.path.exists(folder)


@pytest.mark.slow
def test_a_diverged_teacher_is_never_cached(tmp_path, monkeypatch):
    # Fine-tuning that diverges: the loss turns NaN on the first step (what
    # teacher.finetune.learning_rate: 1e6 did to MiniLM).
    def diverging_loss(self):
        return lambda y_true, y_pred: keras.ops.mean(y_pred) * float("nan")

    monkeypatch.setattr(ClassificationObjective, "loss", diverging_loss)
    config = toy(tmp_path)
    with pytest.raises(TrainingError, match="teacher.finetune.learning_rate"):
        Experiment(load_config(config)).finetune_teacher()
    assert teacher_entries() == []
    teachers = os.path.join(os.environ["KDPLUG_CACHE_DIR"], "teachers")
    assert not os.path.isdir(teachers) or os.listdir(teachers) == []


def test_finetune_seed_shares_one_teacher_across_run_seeds(tmp_path):
    """`teacher.finetune.seed: 0` gives runs with seeds 0, 1 and 2 the same
    fine-tuning cache key, the key of a seed-0 run that does not set it;
    without it every seed has its own teacher."""
    import yaml

    from kdplug.teacher.finetune import TeacherFinetuner

    path = toy(tmp_path)
    base = yaml.safe_load(open(path))

    def key(seed, finetune_seed=None):
        doc = dict(base, seed=seed)
        doc["teacher"] = dict(base["teacher"], finetune=dict(base["teacher"]["finetune"]))
        if finetune_seed is not None:
            doc["teacher"]["finetune"]["seed"] = finetune_seed
        variant = tmp_path / f"s{seed}-{finetune_seed}.yaml"
        variant.write_text(yaml.safe_dump(doc))
        config = load_config(str(variant))
        return TeacherFinetuner(config, config.teacher.source).key()

    shared = {key(seed, finetune_seed=0) for seed in (0, 1, 2)}
    assert shared == {key(0)}
    assert len({key(0), key(1), key(2)}) == 3
    assert key(1, finetune_seed=1) == key(1) != key(1, finetune_seed=0)


@pytest.mark.slow
def test_an_interrupted_fine_tuning_resumes_at_its_first_unfinished_epoch(
        tmp_path, monkeypatch, kdplug_log):
    """A kill during the teacher's fine-tuning (the C-MLM teacher of
    configs/cmlm_seq2seq.yaml takes most of an hour on 2 cores) loses at most
    the epoch it was in: the next run resumes from the epoch backup kept in
    the cache entry's folder, with the optimizer's state and step count; a
    kill after fit, before the weights are cached, loses the last epoch."""
    from kdplug.teacher import finetune

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 2:
                raise KeyboardInterrupt

    real_progress = finetune.progress_lines
    monkeypatch.setattr(finetune, "progress_lines",
                        lambda *a: [*real_progress(*a), Interrupt()])
    config = toy(tmp_path, epochs=3)
    with pytest.raises(KeyboardInterrupt):
        Experiment(load_config(config)).finetune_teacher()
    teachers = os.path.join(os.environ["KDPLUG_CACHE_DIR"], "teachers")
    [key] = os.listdir(teachers)
    backup = os.path.join(teachers, key, "backup")
    assert os.path.isdir(backup)
    [partial] = teacher_entries()  # listed, not cached yet
    assert (partial["status"], partial["detail"]) == ("partial", "fine-tuning not finished")

    monkeypatch.setattr(finetune, "progress_lines", real_progress)
    steps = []
    real_fit = keras.Model.fit

    def fit(model, *args, **kwargs):
        history = real_fit(model, *args, **kwargs)
        steps.append(int(model.optimizer.iterations.numpy()))
        return history

    monkeypatch.setattr(keras.Model, "fit", fit)
    # killed again after fit, before the weights are cached: the backup of
    # epoch 2 is still there
    save_weights = finetune.storage.save_weights

    def killed(model, path, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(finetune.storage, "save_weights", killed)
    with pytest.raises(KeyboardInterrupt):
        Experiment(load_config(config)).finetune_teacher()
    monkeypatch.setattr(finetune.storage, "save_weights", save_weights)
    info = Experiment(load_config(config)).finetune_teacher()
    assert info["cached"] is False
    assert info["resumed_at_epoch"] == 2  # its `seconds` are epoch 3's only
    resumed = (f"stage teacher fine-tuning: resumed from {backup} at epoch 3 "
               "(2 finished)")
    assert kdplug_log().count(resumed) == 2
    assert steps == [3 * 3] * 2  # 3 epochs of 3 steps (44 training examples, batch 16)
    assert not os.path.exists(backup)
    [entry] = teacher_entries()
    assert entry["status"] == "ok"


@pytest.mark.slow
def test_a_run_killed_while_evaluating_its_fine_tuned_teacher_keeps_the_weights(
        tmp_path, monkeypatch, kdplug_log):
    """The fine-tuned weights are cached before the dev split is evaluated
    for the entry's report (a minute for MiniLM-L6 on 2 CPU cores): a kill
    then leaves them, listed as partial, and the next run evaluates them
    instead of fine-tuning again, with the report an uninterrupted run
    writes."""
    config = toy(tmp_path, epochs=2, early_stopping={"patience": 1})
    evaluate = ClassificationObjective.info

    def killed(self, history, teacher, val_ds):
        raise KeyboardInterrupt

    monkeypatch.setattr(ClassificationObjective, "info", killed)
    with pytest.raises(KeyboardInterrupt):
        Experiment(load_config(config)).finetune_teacher()
    [partial] = teacher_entries()
    assert (partial["status"], partial["detail"]) == ("partial",
                                                      "fine-tuned, not evaluated yet")
    weights = os.path.join(partial["path"], "model.weights.h5")
    with open(weights, "rb") as f:
        fine_tuned = f.read()

    # what a kill right after the weights, before the rest is removed, leaves
    for leftover in ("backup", "early_stopping"):
        os.makedirs(os.path.join(partial["path"], leftover), exist_ok=True)
    monkeypatch.setattr(ClassificationObjective, "info", evaluate)
    monkeypatch.setattr(keras.Model, "fit", lambda *a, **k: pytest.fail("fine-tuned again"))
    info = Experiment(load_config(config)).finetune_teacher()
    assert any("not evaluated yet" in m and "evaluating them" in m for m in kdplug_log())
    assert info["cached"] is True
    assert 0.0 <= info["validation_accuracy"] <= 1.0 and 0.0 <= info["train_accuracy"] <= 1.0
    assert 1 <= info["early_stopping"]["epochs_run"] <= 2 and info["seconds"] > 0
    [entry] = teacher_entries()
    assert entry["status"] == "ok"
    assert sorted(os.listdir(entry["path"])) == sorted([ENTRY_MARKER, "info.json",
                                                        "model.weights.h5"])
    with open(weights, "rb") as f:
        assert f.read() == fine_tuned  # kept as the killed run wrote it
    # the same report as a run that was not killed
    assert Experiment(load_config(config)).finetune_teacher() == info


@pytest.mark.slow
def test_the_key_counts_the_data_by_content_not_by_the_path_naming_it(tmp_path):
    """Two configs in different folders naming the same data file by
    different relative paths share one fine-tuned teacher; a changed file
    does not. A teacher cached under the older key (the paths as written
    hashed too) is found and loaded, not fine-tuned again."""
    import shutil

    import yaml

    from kdplug.teacher.finetune import TeacherFinetuner

    doc = yaml.safe_load(open(toy(tmp_path / "toy")))
    shutil.copy(doc["data"]["path"], tmp_path / "shared.tsv")

    def config_in(folder, data_path):
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "c.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(dict(doc, data=dict(doc["data"], path=data_path)), f)
        return load_config(path)

    near = config_in(tmp_path / "a", "../shared.tsv")
    far = config_in(tmp_path / "b" / "c", "../../shared.tsv")
    absolute = config_in(tmp_path / "d", str(tmp_path / "shared.tsv"))
    keys = {TeacherFinetuner(c, c.teacher.source).key()
            for c in (near, far, absolute)}
    assert len(keys) == 1
    legacy = {TeacherFinetuner(c, c.teacher.source).key(legacy=True)
              for c in (near, far, absolute)}
    assert len(legacy) == 3 and not legacy & keys

    with open(tmp_path / "shared.tsv", "a") as f:
        f.write("another sentence entirely\t1\ttrain\n")
    changed = TeacherFinetuner(near, near.teacher.source).key()
    assert changed not in keys

    # An entry under the older key: found where it is and loaded.
    shutil.copy(doc["data"]["path"], tmp_path / "shared.tsv")
    finetuner = TeacherFinetuner(near, near.teacher.source)
    assert Experiment(near).finetune_teacher()["cached"] is False
    teachers = os.path.dirname(finetuner.cache_dir)
    os.rename(finetuner.cache_dir,
              os.path.join(teachers, finetuner.key(legacy=True)))
    moved = TeacherFinetuner(near, near.teacher.source)
    assert moved.cache_dir == os.path.join(teachers, finetuner.key(legacy=True))
    assert Experiment(near).finetune_teacher()["cached"] is True
    # other paths to the same file look under the new key only
    assert TeacherFinetuner(far, far.teacher.source).cache_dir == (
        os.path.join(teachers, finetuner.key()))


def test_a_teacher_fine_tuned_in_mixed_precision_has_its_own_entry(tmp_path):
    """bfloat16 / float16 compute gives other fine-tuned weights, and the
    same weights other outputs: neither cache entry is shared with float32
    (whose key is unchanged by the option)."""
    import yaml

    from kdplug.teacher.finetune import TeacherFinetuner
    from kdplug.teacher.fingerprints import teacher_fingerprint
    from kdplug.testing import tiny_bert_classifier
    from kdplug.training.distribution import precision_policy

    path = toy(tmp_path)
    base = yaml.safe_load(open(path))
    keys = {}
    for precision in (None, "mixed_bfloat16"):
        doc = dict(base, training=dict(base["training"], mixed_precision=precision))
        variant = tmp_path / f"{precision}.yaml"
        variant.write_text(yaml.safe_dump(doc))
        config = load_config(str(variant))
        keys[precision] = TeacherFinetuner(config, config.teacher.source).key()
    assert keys[None] != keys["mixed_bfloat16"]
    model = tiny_bert_classifier()
    with precision_policy("mixed_bfloat16"):
        mixed = tiny_bert_classifier()
    mixed.set_weights(model.get_weights())
    assert teacher_fingerprint(model) != teacher_fingerprint(mixed)
