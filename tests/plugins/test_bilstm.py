import os

import keras
import keras_hub
import numpy as np
import pytest

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.data import WordEncoder
from kdplug.data.word_encoder import word_dataset
from kdplug.errors import ConfigError
from kdplug.models import BertClassifier
from kdplug.models import BiLstmSiameseClassifier
from kdplug_plugins.bilstm.bilstm_method import BiLstmMethod
from kdplug_plugins.bilstm.bilstm_siamese_method import BiLstmSiameseMethod
from kdplug_plugins.students.bilstm_siamese import BiLstmSiameseStudent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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


def test_loss_matches_hand_computation():
    (stage,) = BiLstmMethod(BiLstmMethod.Config(alpha=0.25)).stages(None, None)
    teacher = {"logits": np.array([[2.0, 0.0], [0.0, 1.0]], "float32")}
    student = {"logits": np.array([[1.0, 1.0], [0.0, 0.0]], "float32")}
    batch = {"labels": np.array([0, -1], "int32")}  # the second is unlabelled
    total = sum(float(t.weight.numpy()) * np.asarray(t(teacher, student, batch))
                for t in stage.terms)
    # example 1: mse (1 + 1) / 2 = 1, ce = ln 2; example 2: mse 1/2, no label
    np.testing.assert_allclose(total, [0.75 * 1.0 + 0.25 * np.log(2.0), 0.75 * 0.5],
                               rtol=1e-6)


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


def test_siamese_student_learns_paraphrase_pairs_end_to_end():
    train, test = paraphrase_pairs(256, seed=0), paraphrase_pairs(128, seed=1)
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    text_encoder = TextEncoder(keras_hub.tokenizers.BertTokenizer(vocabulary=vocabulary), 14)
    # The teacher reads "[CLS] a [SEP] b [SEP]" (segment ids 0 / 1).
    teacher = BertClassifier(testing.tiny_backbone(
        num_layers=1, vocabulary_size=len(vocabulary), seed=0), 2, dropout=0.0)
    # The student reads its own word ids of each sentence.
    words = WordEncoder.from_examples(train, sequence_length=6)
    keras.utils.set_random_seed(0)
    kind = BiLstmSiameseStudent(BiLstmSiameseStudent.Config(
        input="word_ids", vocabulary_size=words.vocabulary_size, embedding_dim=16,
        lstm_units=16, hidden_dim=32, dropout=0.0))
    method = BiLstmSiameseMethod(BiLstmSiameseMethod.Config(alpha=0.5))
    student = method.build_student(teacher, kind, num_classes=2)
    assert isinstance(student, BiLstmSiameseClassifier)
    (stage,) = method.stages(teacher, student)

    train_ds = word_dataset(text_encoder, words, train, 32, shuffle=True, seed=0)
    x, _ = next(iter(train_ds))
    assert int(np.max(x["segment_ids"])) == 1
    assert x["word_ids"].shape == x["word_ids_b"].shape == (32, 6)
    distiller = Distiller(student, teacher, stage.terms)
    distiller.compile(optimizer=keras.optimizers.Adam(1e-2), jit_compile=False,
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    history = distiller.fit(train_ds, epochs=4, verbose=0, shuffle=False).history
    assert history["loss"][-1] < 0.9 * history["loss"][0], history["loss"]
    assert np.isfinite(history["logit_mse"]).all()
    # Held-out accuracy (chance is 0.5).
    test_x = words.features(test)
    predicted = np.argmax(student(test_x, training=False), axis=-1)
    accuracy = float(np.mean(predicted == test.labels))
    assert accuracy >= 0.8, accuracy
