"""`CmlmSeq2SeqRunner`'s draws: the teacher's (C-MLM head, fine-tuning
masks) follow `teacher.finetune.seed`, the students' batches the run's
seed, the same for every student of a run."""

import keras
import numpy as np
import pytest

from kdplug.config import load_config
from kdplug.run import RunContext
from kdplug.testing.toy_config import write_toy_config
from kdplug_plugins.cmlm_seq2seq import cmlm_seq2seq_runner
from kdplug_plugins.cmlm_seq2seq.cmlm_seq2seq_runner import CmlmSeq2SeqRunner

from cmlm_helpers import write_pairs

METHOD = {"name": "cmlm-seq2seq", "max_source_length": 6, "max_target_length": 7,
          "passes": 3, "top_k": 4}
STUDENT = {"kind": "seq2seq-transformer", "hidden_dim": 16, "num_encoder_layers": 1,
           "num_decoder_layers": 1, "num_heads": 2, "intermediate_dim": 32}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return write_pairs(tmp_path_factory.mktemp("pairs") / "pairs.tsv", 60)


def runner(folder, pairs, seed, teacher_seed):
    """A runner of a toy config with run `seed` and `teacher.finetune.seed`,
    its context made as `Experiment` makes it (the run's seed set first)."""
    config = load_config(write_toy_config(
        folder, METHOD, data={"path": pairs, "sequence_length": 16}, student=STUDENT,
        seed=seed, teacher={"finetune": {"epochs": 1, "batch_size": 8,
                                         "learning_rate": 3e-3, "seed": teacher_seed}},
        training={"length_buckets": {"window": 2, "multiple": 4}}))
    keras.utils.set_random_seed(config.seed)
    context = RunContext.create(config)
    return CmlmSeq2SeqRunner(context.method(), context)


def teacher_draws(tmp_path, pairs, monkeypatch, seed, teacher_seed):
    """What the C-MLM fine-tuning would see: two epochs of masked batches,
    the C-MLM model's initial weights and the fine-tuned teacher's cache
    key (the real `TeacherFinetuner`'s; its `run` replaced)."""
    seen = {}

    class Finetuner(cmlm_seq2seq_runner.TeacherFinetuner):
        def run(self, mlm, train, val, jit_compile=True):
            seen["key"] = self.key()
            seen["weights"] = mlm.get_weights()
            seen["epochs"] = [[(x["token_ids"].numpy(), x["mask_positions"].numpy())
                               for x, _ in train] for _ in range(2)]
            return {"cached": False}

    monkeypatch.setattr(cmlm_seq2seq_runner, "TeacherFinetuner", Finetuner)
    runner(tmp_path / f"s{seed}-t{teacher_seed}", pairs, seed, teacher_seed).finetune_teacher()
    return seen


def same(a, b):
    return len(a) == len(b) and all(
        np.array_equal(x, y) for pair_a, pair_b in zip(a, b) for x, y in zip(pair_a, pair_b))


def test_finetuning_masks_and_head_follow_the_teacher_seed_not_the_run_seed(
        tmp_path, pairs, monkeypatch):
    first = teacher_draws(tmp_path, pairs, monkeypatch, seed=0, teacher_seed=5)
    other_run = teacher_draws(tmp_path, pairs, monkeypatch, seed=1, teacher_seed=5)
    other_teacher = teacher_draws(tmp_path, pairs, monkeypatch, seed=0, teacher_seed=6)
    # one cached teacher (its key has the teacher's seed, not the run's) ...
    assert first["key"] == other_run["key"] != other_teacher["key"]
    # ... is fine-tuned on the same masks in every epoch, from the same head
    for epoch in range(2):
        assert same(first["epochs"][epoch], other_run["epochs"][epoch])
        assert not same(first["epochs"][epoch], other_teacher["epochs"][epoch])
    assert not same(first["epochs"][0], first["epochs"][1])  # new masks every epoch
    assert all(np.array_equal(a, b) for a, b in zip(first["weights"], other_run["weights"]))
    assert not all(np.array_equal(a, b)
                   for a, b in zip(first["weights"], other_teacher["weights"]))


def test_every_student_of_a_run_gets_the_same_batches(tmp_path, pairs, monkeypatch):
    """`run()` makes a dataset per student: iterating one dataset again
    reshuffles on, which would give the second student other batches (and
    a distilled-only sweep run other batches than a run with both)."""
    run = runner(tmp_path / "run", pairs, seed=3, teacher_seed=0)
    data = run._read()
    with run._teacher_seeded():
        run._load_teacher()

    def epoch(ds):
        return [y.numpy() for _, y in ds]

    first = run._dataset(data, "train", {}, shuffle=True)
    once, again = epoch(first), epoch(first)
    fresh = epoch(run._dataset(data, "train", {}, shuffle=True))
    assert same([once], [fresh])
    assert not same([once], [again])


@pytest.mark.slow
def test_a_distilled_only_run_trains_the_distilled_student_of_a_run_with_both(
        tmp_path, pairs):
    """What lets a sweep train the MLE-only student once per seed
    (bench/seq2seq.py): `mle_baseline: false` gives the distilled student
    its run with both students would have given."""
    from kdplug.run.experiment import Experiment

    def distilled(name, mle_baseline):
        config = load_config(write_toy_config(
            tmp_path / name, dict(METHOD, mle_baseline=mle_baseline),
            data={"path": pairs, "sequence_length": 16}, student=STUDENT,
            training={"epochs": 1}, export=False))
        report = Experiment(config).run()
        return report["history"]["cmlm_kd"], report["variants"]["cmlm_kd"]

    both, alone = distilled("both", True), distilled("alone", False)
    assert both[0] == alone[0]
    assert both[1]["perplexity"] == pytest.approx(alone[1]["perplexity"], rel=1e-6)
    assert both[1]["bleu"] == alone[1]["bleu"]
