import numpy as np
import pytest

from kdplug.evaluation.token_metrics import token_metrics
from kdplug.evaluation.token_metrics import word_sequences

NAMES = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def logits_of(classes, num_classes=len(NAMES)):
    """One-hot logits `(n, seq, C)` whose argmax is `classes`."""
    return np.eye(num_classes, dtype="float32")[np.asarray(classes)] * 3.0


def test_counts_entities_by_hand():
    # -1: [CLS], [SEP], continuation pieces, padding; their logits are junk
    labels = np.array([
        [-1, 1, 2, -1, 0, 3, -1, -1],   # B-PER I-PER O B-LOC
        [-1, 0, 3, -1, -1, -1, -1, -1],  # O B-LOC
        [-1, 1, 0, 3, 4, -1, -1, -1],   # B-PER O B-LOC I-LOC
    ])
    predicted = np.array([
        [4, 1, 2, 3, 0, 0, 4, 4],       # B-PER I-PER O O      : TP PER, FN LOC
        [4, 1, 3, 4, 4, 4, 4, 4],       # B-PER B-LOC          : FP PER, TP LOC
        [4, 1, 0, 3, 0, 2, 2, 2],       # B-PER O B-LOC O      : TP PER, FP+FN LOC
    ])
    # TP 3, FP 2 (PER in row 2, the one-word LOC in row 3),
    # FN 2 (LOC in row 1, the two-word LOC in row 3): F1 = 6 / (6 + 2 + 2)
    # words: 4 + 2 + 4 = 10, right: 3 + 1 + 3 = 7
    got = token_metrics(["entity_f1", "token_accuracy"], logits_of(predicted),
                        labels, label_names=NAMES)
    assert list(got) == ["entity_f1", "token_accuracy"]
    assert got["entity_f1"] == pytest.approx(0.6)
    assert got["token_accuracy"] == pytest.approx(0.7)


def test_only_labelled_positions_form_the_word_sequence():
    labels = np.array([[-1, 1, -1, 2, -1]])
    # the continuation piece between the two words predicts O: not read,
    # so B-PER I-PER stays one entity
    predicted = np.array([[0, 1, 0, 2, 0]])
    gold, pred = word_sequences(logits_of(predicted), labels)
    assert gold[0].tolist() == pred[0].tolist() == [1, 2]
    got = token_metrics(["token_accuracy", "entity_f1"], logits_of(predicted),
                        labels, NAMES)
    assert got == {"token_accuracy": 1.0, "entity_f1": 1.0}


def test_no_entity_and_no_word_give_zero():
    labels = np.array([[-1, 0, 0, -1]])
    got = token_metrics(["token_accuracy", "entity_f1"],
                        logits_of([[0, 0, 0, 0]]), labels, NAMES)
    assert got == {"token_accuracy": 1.0, "entity_f1": 0.0}
    none = np.full((1, 4), -1)
    assert token_metrics(["token_accuracy", "entity_f1"], logits_of([[0] * 4]),
                         none, NAMES) == {"token_accuracy": 0.0, "entity_f1": 0.0}


def test_token_accuracy_of_pos_tags_needs_no_names():
    labels = np.array([[-1, 2, 1, -1], [-1, 0, -1, -1]])
    predicted = np.array([[0, 2, 2, 0], [0, 0, 0, 0]])
    got = token_metrics(["token_accuracy"], logits_of(predicted, 3), labels)
    assert got == {"token_accuracy": pytest.approx(2 / 3)}


def test_bad_requests_are_explained():
    labels = np.array([[-1, 0]])
    with pytest.raises(ValueError, match="label_names"):
        token_metrics(["entity_f1"], logits_of([[0, 0]]), labels)
    with pytest.raises(ValueError, match="unknown token metric"):
        token_metrics(["f1_macro"], logits_of([[0, 0]]), labels)
    with pytest.raises(ValueError, match=r"\(n, seq, C\)"):
        token_metrics(["token_accuracy"], np.zeros((1, 2)), labels)
