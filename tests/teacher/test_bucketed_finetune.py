"""The teacher's fine-tuning in length buckets (`training.length_buckets`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import yaml
from test_output_cache import make_encoder
from test_output_cache import make_examples
from test_output_cache import make_teacher

from kdplug.config import load_config
from kdplug.data.length_buckets import LengthBuckets
from kdplug.run.experiment import Experiment
from kdplug.teacher.finetune import TeacherFinetuner
from kdplug.teacher.objectives import ClassificationObjective
from kdplug.testing.toy_config import write_toy_config

SEQ = 24


def toy(tmp_path, buckets):
    return write_toy_config(tmp_path, {"name": "kd"}, num_examples=64,
                            training={"length_buckets": buckets},
                            teacher={"finetune": {"epochs": 1, "batch_size": 8,
                                                  "learning_rate": 3e-3}})


def test_length_buckets_are_part_of_the_key_only_when_set(tmp_path):
    base = yaml.safe_load(open(toy(tmp_path, None)))

    def key(buckets):
        variant = tmp_path / "variant.yaml"
        variant.write_text(yaml.safe_dump(
            dict(base, training=dict(base["training"], length_buckets=buckets))))
        config = load_config(str(variant))
        return TeacherFinetuner(config, config.teacher.source).key()

    plain = key(None)
    assert len({plain, key({"window": 4}), key({"window": 2})}) == 3
    assert key(False) == plain


@pytest.mark.slow
def test_bucketed_batches_give_the_padded_loss_in_eval_mode():
    encoder, examples = make_encoder(SEQ), make_examples(n=16, seed=5)
    teacher, loss = make_teacher(), ClassificationObjective().loss()
    ds = encoder.dataset(examples, 8, shuffle=True, seed=1,
                         length_buckets=LengthBuckets(window=2, multiple=4))
    seen = 0
    for x, y in ds:
        width = x["token_ids"].shape[1]
        assert width % 4 == 0 and width < SEQ
        assert int(x["padding_mask"].numpy().sum(axis=1).max()) > width - 4
        # the same examples padded to the sequence length (pad id 0, on the right)
        padded = {k: np.pad(v.numpy(), [(0, 0), (0, SEQ - width)]) for k, v in x.items()}
        cut = keras.ops.convert_to_numpy(loss(y, teacher(x, training=False)))
        full = keras.ops.convert_to_numpy(loss(y, teacher(padded, training=False)))
        np.testing.assert_allclose(cut, full, rtol=0, atol=1e-5)
        seen += len(y)
    assert seen == len(examples)


@pytest.mark.slow
def test_fine_tuning_reads_length_buckets(tmp_path, monkeypatch):
    datasets = []
    run = TeacherFinetuner.run

    def recording(self, teacher, train_ds, val_ds, **kwargs):
        datasets.append(train_ds)
        return run(self, teacher, train_ds, val_ds, **kwargs)

    monkeypatch.setattr(TeacherFinetuner, "run", recording)
    config = load_config(toy(tmp_path, {"window": 2, "multiple": 4}))
    info = Experiment(config).finetune_teacher()
    assert info["cached"] is False
    [train_ds] = datasets
    shapes = [tuple(x["token_ids"].shape) for x, _ in train_ds]
    length = config.data.sequence_length
    assert len(shapes) == int(train_ds.cardinality())
    assert all(w % 4 == 0 or w == length for _, w in shapes)
    assert min(w for _, w in shapes) < length


def test_the_dev_split_passes_read_by_length_report_the_padded_values():
    from kdplug import testing
    from kdplug.teacher.objectives import RegressionObjective

    x, _ = testing.toy_arrays(num_examples=45, sequence_length=32, seed=6)
    y = np.random.default_rng(0).normal(size=45).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)  # padded to 32
    buckets = LengthBuckets(multiple=8)
    teacher = testing.tiny_bert_classifier(num_classes=1, max_sequence_length=32, seed=1)
    objective = RegressionObjective()
    history = {"loss": [0.5]}
    plain = objective.info(history, teacher, ds)["validation"]
    by_length = objective.info(history, teacher, ds, length_buckets=buckets)["validation"]
    # (an untrained head's outputs vary by about 4e-6: the correlations
    # amplify their float rounding, about 2e-9)
    assert by_length == pytest.approx(plain, rel=1e-5, abs=1e-4)
    # early stopping's validation metrics (val_pearson, ...) read it by length too
    finetuner = TeacherFinetuner.__new__(TeacherFinetuner)  # no config: `_scores` alone
    finetuner.objective = objective
    [scores] = finetuner._scores(object(), teacher, ds, buckets)
    assert scores.length_buckets is buckets
    values = scores.values()
    assert values == pytest.approx({k: plain[k] for k in values}, rel=1e-5, abs=1e-4)
    labels = (y > 0).astype("int32")  # the classification objective's accuracy
    classifier = testing.tiny_bert_classifier(max_sequence_length=32, seed=2)
    ds = tf.data.Dataset.from_tensor_slices((x, labels)).batch(16)
    train = {"accuracy": [0.5]}
    assert (ClassificationObjective().info(train, classifier, ds, length_buckets=buckets)
            == ClassificationObjective().info(train, classifier, ds))
