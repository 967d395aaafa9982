"""A student with its own tokenizer (issue #16, `student.kind: hub`): a
RoBERTa teacher (byte-level BPE) distilled into a BERT student (WordPiece),
each model reading its own encoding of the same examples in every batch."""

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kdplug import keys
from kdplug import testing
from kdplug.cli import main
from kdplug.config import load_config
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.run_files import STUDENT_TOKENIZER
from kdplug.data.student_text_encoder import StudentTextEncoder
from kdplug.data.trimming import trim_to_longest
from kdplug.errors import ConfigError
from kdplug.models import KeyedInputs
from kdplug.run.experiment import Experiment
from kdplug.run.trained_run import TrainedRun
from kdplug.testing import families
from kdplug.testing.toy_config import write_toy_config

TEXTS = ["good fine film", "bad dull plot", "fine good", "dull bad bad film"]


def test_keyed_inputs_reads_its_own_keys_and_round_trips(tmp_path):
    inner = testing.tiny_bert_classifier(num_layers=2, seed=3)
    model = KeyedInputs(inner)
    own, _ = testing.toy_batch(4, vocabulary_size=20, seed=1)
    other, _ = testing.toy_batch(4, vocabulary_size=20, seed=2)
    batch = {**other, **{keys.student_key(k): v for k, v in own.items()}}
    assert model.input_keys == ("student/token_ids", "student/segment_ids",
                                "student/padding_mask")
    expected = keras.ops.convert_to_numpy(inner(own))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(batch)), expected, atol=1e-6)
    assert not np.allclose(keras.ops.convert_to_numpy(inner(other)), expected)
    taps = model.taps(batch, ["cls/1", "logits"])
    assert taps["cls/1"].shape == (4, inner.hidden_dim)
    assert model.num_layers == 2 and model.available_taps() == inner.available_taps()
    path = str(tmp_path / "student.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, KeyedInputs) and loaded.prefix == "student/"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(batch)), expected, atol=1e-6)


def test_student_text_encoder_is_its_tokenizers_encoding_under_student_keys(tmp_path):
    """A WordPiece student's, as in the run below: the encoder does not
    depend on the family (a byte-level BPE tokenizer, the run's teacher,
    costs about 5 s per trace, and this test traces three times)."""
    tokenizer = families.tiny_tokenizer("bert", tmp_path / "files")
    encoder = StudentTextEncoder(tokenizer, sequence_length=12)
    examples = Examples(TEXTS, np.zeros(4, "int32"), None, "toy")
    features = encoder.features(examples)
    plain = TextEncoder(tokenizer, 12).encode_examples(examples)
    assert sorted(features) == sorted(keys.student_key(k) for k in keys.TOKEN_INPUTS)
    for name in keys.TOKEN_INPUTS:
        np.testing.assert_array_equal(features[keys.student_key(name)], plain[name])
    assert features["student/token_ids"][0, 0] == tokenizer.cls_token_id  # [CLS]
    backbone = families.tiny_backbone("bert", tokenizer.vocabulary_size())
    encoder.save(str(tmp_path / STUDENT_TOKENIZER), backbone)
    again = StudentTextEncoder.load(str(tmp_path / STUDENT_TOKENIZER), 12).features(examples)
    np.testing.assert_array_equal(again["student/token_ids"], features["student/token_ids"])
    # length buckets cut the student's inputs to its own longest sentence
    batch = {**{k: v[:, :8] for k, v in plain.items()}, **features}
    short = trim_to_longest(batch, multiple=4)
    longest = int(features["student/padding_mask"].sum(axis=1).max())
    assert short["student/token_ids"].shape[1] == -(-longest // 4) * 4


def cross_config(tmp_path, method=None, **sections):
    teacher = families.write_tiny_preset("roberta", tmp_path / "roberta")
    student = families.write_tiny_preset("bert", tmp_path / "bert", num_layers=1, seed=1)
    return write_toy_config(
        tmp_path, method or {"name": "kd", "temperature": 2.0, "alpha": 0.5},
        teacher={"source": teacher, "finetune": {"epochs": 1, "batch_size": 16,
                                                 "learning_rate": 3e-3},
                 **sections.pop("teacher", {})},
        student={"kind": "hub", "source": "bert"},  # beside the config
        data={"sequence_length": 32}, **sections)


@pytest.mark.slow
def test_roberta_teacher_distils_into_a_bert_student_that_ships_with_its_tokenizer(
        tmp_path, capsys):
    path = cross_config(tmp_path, training={"epochs": 2, "length_buckets": {}},
                        export={"formats": ["keras", "keras_hub_preset"]})
    config = load_config(path)
    assert config.student_config.source == str(tmp_path / "bert")  # resolved
    report = Experiment(config).run()
    loss = report["history"]["distill"]["loss"]
    assert loss[-1] < loss[0]
    run_dir = tmp_path / "runs" / "toy"
    student = keras.saving.load_model(run_dir / "student.keras")
    assert isinstance(student, KeyedInputs)
    assert type(student.model.backbone).__name__ == "BertBackbone"
    assert report["student"]["params"] == student.model.count_params()
    # the student's own WordPiece encoding, not the teacher's BPE, is what it read
    bert_tokenizer = keras_hub.models.Tokenizer.from_preset(str(run_dir / STUDENT_TOKENIZER))
    assert isinstance(bert_tokenizer, keras_hub.models.BertTokenizer)
    own = StudentTextEncoder(bert_tokenizer, 32).encoder(tf.constant(TEXTS))
    expected = keras.ops.softmax(student.model(own), axis=-1)
    # the shipped preset: keras-hub alone, raw strings in
    shipped = keras_hub.models.TextClassifier.from_preset(
        str(run_dir / "export" / "keras_hub_preset"))
    assert isinstance(shipped, keras_hub.models.BertTextClassifier)
    np.testing.assert_allclose(keras.ops.softmax(shipped.predict(TEXTS, verbose=0)),
                               expected, atol=1e-5)
    # kdplug predict encodes with the student's tokenizer alone
    run = TrainedRun(str(run_dir))
    alone, _ = next(iter(run.dataset(run.examples(TEXTS), roles=["student"])))
    assert sorted(alone) == sorted(keys.student_key(k) for k in keys.TOKEN_INPUTS)
    predicted = run.predict(TEXTS)
    np.testing.assert_allclose([[p["probabilities"][k] for k in sorted(p["probabilities"])]
                                for p in predicted], expected, atol=1e-5)
    assert main(["predict", str(run_dir), "--text", TEXTS[0]]) == 0
    assert TEXTS[0] in capsys.readouterr().out
    # `kdplug export` afterwards ships what `kdplug run` shipped: the inner
    # model, whose `serve_text` tokenises with the student's tokenizer
    again = tmp_path / "again"
    assert main(["export", str(run_dir), "--format", "saved_model", "--format",
                 "keras_hub_preset", "--output", str(again)]) == 0
    served = tf.saved_model.load(str(again / "saved_model")).signatures["serve_text"](
        text=tf.constant(TEXTS))["output_0"]
    np.testing.assert_allclose(keras.ops.softmax(served), expected, atol=1e-5)
    assert (again / "keras_hub_preset" / "assets" / "tokenizer" / "vocabulary.txt").is_file()


@pytest.mark.slow
def test_a_token_level_term_with_its_own_tokenizer_is_refused(tmp_path, capsys):
    """TinyBERT's intermediate stage compares hidden states and attention
    maps position by position: refused before any training (PKD's [CLS]
    term, `cls/<i>`, one vector per example, is allowed)."""
    path = cross_config(tmp_path, method={"name": "tinybert",
                                          "stages": ["task_intermediate"]},
                        teacher={"finetune": None}, export=False)
    assert main(["validate", path]) == 0  # the inputs alone are fine
    assert main(["validate", "--build", path]) == 2
    err = capsys.readouterr().err
    assert "student.kind: task_intermediate/" in err and "own tokenizer" in err
    with pytest.raises(ConfigError, match=r"student\.kind: task_intermediate/\w+ reads "
                                          r"'embeddings', which runs over token positions"):
        Experiment(load_config(path)).run()


def test_a_missing_student_source_names_the_field(tmp_path):
    path = write_toy_config(tmp_path, {"name": "kd"},
                            student={"kind": "hub", "source": "./no_such_model"})
    with pytest.raises(ConfigError, match=r"student\.source: .*no_such_model: not found"):
        load_config(path)


def test_the_student_sources_content_is_part_of_the_run_settings(tmp_path):
    """A preset changed in place at the same path is a changed run (its
    stages are not reused), like a changed data file."""
    from kdplug.run.run_folder import run_settings
    from kdplug.storage import fingerprint

    source = testing.write_tiny_preset(str(tmp_path / "student"), seed=1)
    path = write_toy_config(tmp_path, {"name": "kd"},
                            student={"kind": "hub", "source": "./student"})
    config = load_config(path)
    assert config.input_files == {"student.source": source}
    before = fingerprint(run_settings(config))
    testing.write_tiny_preset(source, seed=2)  # other weights, same path
    assert fingerprint(run_settings(load_config(path))) != before
