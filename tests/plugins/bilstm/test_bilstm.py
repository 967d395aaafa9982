import os

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.data import WordEncoder
from kdplug.data.text_encoder import needs_pair_inputs
from kdplug.data.word_encoder import word_dataset
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.keys import PAIR_INPUTS
from kdplug.models import BertClassifier
from kdplug.models import BiLstmSiameseClassifier
from kdplug.training import FusedAdamW
from kdplug_plugins.bilstm.bilstm_method import BiLstmMethod
from kdplug_plugins.bilstm.bilstm_siamese_method import BiLstmSiameseMethod
from kdplug_plugins.students.bilstm_siamese import BiLstmSiameseStudent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SYNONYMS = [("good", "great"), ("bad", "awful"), ("movie", "film"), ("plot", "story"),
            ("actor", "star"), ("funny", "amusing"), ("long", "lengthy"),
            ("sad", "gloomy"), ("fast", "quick"), ("old", "ancient"),
            ("big", "large"), ("small", "tiny")]
WORDS = [w for pair in SYNONYMS for w in pair]
SWAP = {**dict(SYNONYMS), **{b: a for a, b in SYNONYMS}}


def paraphrase_pairs(num_examples, seed):
    """Label 1: the second sentence is the first with about half of its words
    replaced by synonyms; label 0: an unrelated sentence of the same length."""
    rng = np.random.default_rng(seed)
    texts, pairs, labels = [], [], []
    for i in range(num_examples):
        words = list(rng.choice(WORDS, rng.integers(3, 6), replace=False))
        if i % 2 == 0:
            other = [SWAP[w] if rng.random() < 0.5 else w for w in words]
        else:
            other = list(rng.choice(WORDS, len(words), replace=False))
        texts.append(" ".join(words))
        pairs.append(" ".join(other))
        labels.append(1 - i % 2)
    return Examples(texts, np.array(labels, "int32"), pairs)


@pytest.mark.parametrize("alpha,expected", [
    (0.3, [("logit_mse", 0.7), ("hard_ce", 0.3)]),
    (0.0, [("logit_mse", 1.0)]),
    (1.0, [("hard_ce", 1.0)]),
])
def test_loss_is_alpha_hard_plus_one_minus_alpha_mse(alpha, expected):
    for cls in (BiLstmMethod, BiLstmSiameseMethod):
        (stage,) = cls(cls.Config(alpha=alpha)).stages(None, None)
        assert stage.name == "distill" and stage.trainable is None
        got = [(t.name, pytest.approx(float(t.weight.numpy()))) for t in stage.terms]
        assert got == expected


@pytest.mark.parametrize("unlabelled", ["teacher_argmax", "skip"])
def test_loss_matches_hand_computation(unlabelled):
    config = BiLstmMethod.Config(alpha=0.25, unlabelled=unlabelled)
    (stage,) = BiLstmMethod(config).stages(None, None)
    teacher = {"logits": np.array([[2.0, 0.0], [0.0, 1.0]], "float32")}
    student = {"logits": np.array([[1.0, 1.0], [0.0, 2.0]], "float32")}
    batch = {"labels": np.array([0, -1], "int32")}  # the second is unlabelled
    total = sum(float(t.weight.numpy()) * np.asarray(t(teacher, student, batch))
                for t in stage.terms)
    # example 1: mse (1 + 1) / 2 = 1, ce = ln 2. Example 2: mse (0 + 1) / 2;
    # teacher_argmax: label 1 (argmax [0, 1]), ce = -log softmax([0, 2])[1]
    # = ln(1 + e^-2); skip: no hard term.
    hard2 = np.log(1 + np.exp(-2.0)) if unlabelled == "teacher_argmax" else 0.0
    np.testing.assert_allclose(
        total, [0.75 * 1.0 + 0.25 * np.log(2.0), 0.75 * 0.5 + 0.25 * hard2],
        rtol=1e-6)


def test_hard_term_labels_augmented_rows_with_the_teacher_argmax_by_default():
    for cls in (BiLstmMethod, BiLstmSiameseMethod):
        assert cls.Config().unlabelled == "teacher_argmax"
        (stage,) = cls(cls.Config()).stages(None, None)
        (hard,) = [t for t in stage.terms if t.name == "hard_ce"]
        assert hard.unlabelled == "teacher_argmax"
        assert hard.required_teacher_taps() == {"logits"}
        (stage,) = cls(cls.Config(unlabelled="skip")).stages(None, None)
        (hard,) = [t for t in stage.terms if t.name == "hard_ce"]
        assert hard.unlabelled == "skip" and hard.required_teacher_taps() == set()


def test_configs_validate():
    config = load_config(os.path.join(ROOT, "configs", "bilstm.yaml"))
    assert (config.method.name, config.student.name) == ("bilstm", "bilstm")
    config = load_config(os.path.join(ROOT, "configs", "bilstm_siamese_mrpc.yaml"))
    assert (config.method.name, config.student.name) == ("bilstm-siamese",
                                                         "bilstm-siamese")
    assert config.data.path == "tfds:glue/mrpc"
    assert config.data.text_pair_column == "sentence2"
    assert config.student_config.input == "word_ids"
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}
    for method, kind in (("bilstm", "bilstm"), ("bilstm-siamese", "bilstm-siamese")):
        config = config_from_dict({**base, "method": {"name": method}})
        assert config.student.name == kind
        assert config.method_config.alpha == 0.5
    with pytest.raises(ConfigError, match="alpha"):
        config_from_dict({**base, "method": {"name": "bilstm", "alpha": -0.1}})


VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS


def pair_setup(input, train):
    """A tiny teacher reading "[CLS] a [SEP] b [SEP]" (segment ids 0 / 1), a
    siamese student on `input` ids, and the training dataset feeding both."""
    text_encoder = TextEncoder(
        keras_hub.tokenizers.BertTokenizer(vocabulary=VOCABULARY), 14,
        pair_inputs=input == "token_ids")
    teacher = BertClassifier(testing.tiny_backbone(
        num_layers=1, vocabulary_size=len(VOCABULARY), seed=0), 2, dropout=0.0)
    words = None
    vocabulary_size = None  # token_ids: the teacher's WordPiece vocabulary
    if input == "word_ids":
        words = WordEncoder.from_examples(train, sequence_length=6)
        vocabulary_size = words.vocabulary_size
    keras.utils.set_random_seed(0)
    kind = BiLstmSiameseStudent(BiLstmSiameseStudent.Config(
        input=input, vocabulary_size=vocabulary_size, embedding_dim=16,
        lstm_units=16, hidden_dim=32, dropout=0.0))
    method = BiLstmSiameseMethod(BiLstmSiameseMethod.Config(alpha=0.5))
    student = method.build_student(teacher, kind, num_classes=2)
    assert isinstance(student, BiLstmSiameseClassifier)
    if words is None:
        assert needs_pair_inputs(student)
        train_ds = text_encoder.dataset(train, 32, shuffle=True, seed=0)
    else:
        assert not needs_pair_inputs(student)
        train_ds = word_dataset(text_encoder, words, train, 32, shuffle=True, seed=0)
    return text_encoder, words, teacher, method, student, train_ds


def strip(ids):
    """The WordPiece ids of a row without [CLS], [SEP] and padding."""
    return [int(i) for i in ids if i > 4]


def test_pair_batches_carry_joint_and_separate_encodings():
    """The teacher's joint ids and the siamese student's per-sentence ids
    are the same examples, row by row, in the same shuffled batch."""
    train = paraphrase_pairs(64, seed=3)
    text_encoder = TextEncoder(
        keras_hub.tokenizers.BertTokenizer(vocabulary=VOCABULARY), 14,
        pair_inputs=True)
    x, y = next(iter(text_encoder.dataset(train, 16, shuffle=True, seed=1)))
    assert set(PAIR_INPUTS) <= set(x)
    assert x["token_ids_a"].shape == x["token_ids_b"].shape == (16, 14)
    cls, sep = 2, 3
    index = {pair: i for i, pair in enumerate(zip(train.texts, train.pairs))}

    def decode(ids):
        return " ".join(VOCABULARY[i] for i in strip(ids))

    rows = [index[decode(a), decode(b)]
            for a, b in zip(x["token_ids_a"].numpy(), x["token_ids_b"].numpy())]
    assert len(set(rows)) == 16 and rows != sorted(rows)  # shuffled
    np.testing.assert_array_equal(y.numpy(), train.labels[rows])
    for k, row in enumerate(rows):
        joint = x["token_ids"][k].numpy()
        segment = x["segment_ids"][k].numpy()
        a, b = x["token_ids_a"][k].numpy(), x["token_ids_b"][k].numpy()
        n = int(x["padding_mask"][k].numpy().sum())
        # [CLS] a [SEP] and [CLS] b [SEP], each on its own
        assert a[0] == b[0] == cls
        for ids, mask in ((a, x["padding_mask_a"][k]), (b, x["padding_mask_b"][k])):
            m = int(mask.numpy().sum())
            assert ids[m - 1] == sep and not ids[m:].any()
        # [CLS] a [SEP] b [SEP] for the teacher, b in segment 1
        assert strip(joint[segment == 0]) == strip(a)
        assert strip(joint[:n][segment[:n] == 1]) == strip(b)
        assert joint[n - 1] == sep
    # Without pair_inputs (or for single texts) only the joint encoding.
    plain = TextEncoder(text_encoder.tokenizer, 14)
    assert set(plain(tf.constant(["good"]), tf.constant(["bad"]))) == {
        "token_ids", "segment_ids", "padding_mask"}
    assert set(text_encoder(tf.constant(["good"]))) == {
        "token_ids", "segment_ids", "padding_mask"}


@pytest.mark.slow
@pytest.mark.parametrize("input", ["word_ids", "token_ids"])
def test_siamese_student_learns_paraphrase_pairs_end_to_end(input):
    train, test = paraphrase_pairs(256, seed=0), paraphrase_pairs(128, seed=1)
    text_encoder, words, teacher, method, student, train_ds = pair_setup(input, train)
    (stage,) = method.stages(teacher, student)

    x, _ = next(iter(train_ds))
    assert int(np.max(x["segment_ids"])) == 1
    a_key, _, b_key, _ = student.input_keys
    assert x[a_key].shape == x[b_key].shape == (32, 6 if words else 14)
    # In one batch the teacher reads the joint encoding, the student each
    # sentence on its own.
    teacher_keys = ("token_ids", "segment_ids", "padding_mask")
    np.testing.assert_allclose(
        teacher(x), teacher({k: x[k] for k in teacher_keys}), atol=1e-6)
    np.testing.assert_allclose(
        student(x), student({k: x[k] for k in student.input_keys}), atol=1e-6)
    if input == "token_ids":
        assert a_key == "token_ids_a"
        joint_as_first = dict(x, token_ids_a=x["token_ids"],
                              padding_mask_a=x["padding_mask"])
        assert not np.allclose(student(x), student(joint_as_first), atol=1e-4)
        with pytest.raises(KdplugError, match="pair_inputs=True"):
            student({k: x[k] for k in teacher_keys})
    distiller = Distiller(student, teacher, stage.terms)
    distiller.compile(optimizer=FusedAdamW(1e-2, weight_decay=0.0), jit_compile=False,
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    history = distiller.fit(train_ds, epochs=4, verbose=0, shuffle=False).history
    assert history["loss"][-1] < 0.9 * history["loss"][0], history["loss"]
    assert np.isfinite(history["logit_mse"]).all()
    # Held-out accuracy (chance is 0.5).
    if words is None:
        test_x = text_encoder(tf.constant(test.texts), tf.constant(test.pairs))
    else:
        test_x = words.features(test)
    predicted = np.argmax(student(test_x, training=False), axis=-1)
    accuracy = float(np.mean(predicted == test.labels))
    assert accuracy >= 0.8, accuracy


def test_student_kinds_default_to_the_papers_final_states():
    from kdplug_plugins.students.bilstm import BiLstmStudent

    teacher = testing.tiny_bert_classifier(vocabulary_size=30, seed=0)
    for cls in (BiLstmStudent, BiLstmSiameseStudent):
        assert cls.Config().pooling == "final_states"
        small = dict(embedding_dim=4, lstm_units=3, hidden_dim=5)
        student = cls(cls.Config(**small)).build(teacher, 2)
        assert student.encoder.pooling == "final_states"
        student = cls(cls.Config(pooling="max", **small)).build(teacher, 2)
        assert student.encoder.pooling == "max"
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}
    with pytest.raises(ConfigError, match="pooling"):
        config_from_dict({**base, "method": {"name": "bilstm"},
                          "student": {"kind": "bilstm", "pooling": "mean"}})
    with pytest.raises(ConfigError, match="unlabelled"):
        config_from_dict({**base, "method": {"name": "bilstm", "unlabelled": "drop"}})


def test_shipped_configs_use_the_papers_recipe():
    for name, pair_rule in (("bilstm", None), ("bilstm_siamese_mrpc", "one_or_both")):
        config = load_config(os.path.join(ROOT, "configs", f"{name}.yaml"))
        assert config.method_config.unlabelled == "teacher_argmax"
        assert config.student_config.pooling == "final_states"
        (entry,) = config.augment_entries
        assert (entry.name, entry.n) == ("tang", 20)
        assert entry.config.pair_rule == "one_or_both"
        assert (entry.config.p_mask, entry.config.p_pos, entry.config.p_ng) == (
            0.1, 0.1, 0.25)
