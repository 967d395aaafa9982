"""`outputs_by_length`: a model's outputs over padded arrays, read in length
buckets, equal the padded pass's row by row."""

import keras
import numpy as np
import pytest

from kdplug import testing
from kdplug.data.length_buckets import outputs_by_length
from kdplug.models.bilstm_classifier import BiLstmClassifier

SEQ = 32


def logits(model):
    return lambda x: {"logits": model(x, training=False)}


@pytest.mark.parametrize("kind", ["bert", pytest.param("bilstm", marks=pytest.mark.slow)])
def test_logits_equal_the_padded_pass_in_the_rows_order(kind):
    x, _ = testing.toy_arrays(num_examples=21, sequence_length=SEQ, seed=2)
    keras.utils.set_random_seed(0)
    model = (testing.tiny_bert_classifier(num_layers=1, max_sequence_length=SEQ)
             if kind == "bert" else
             BiLstmClassifier(testing.VOCAB_SIZE, 2, embedding_dim=8, lstm_units=8,
                              hidden_dim=8, dropout=0.0))
    padded = keras.ops.convert_to_numpy(model(x, training=False))
    widths = []

    def forward(batch):
        widths.append(tuple(batch["token_ids"].shape))
        return logits(model)(batch)

    out = outputs_by_length(forward, x, 8, multiple=8)["logits"]
    np.testing.assert_allclose(out, padded, rtol=0, atol=1e-5)
    assert {n for n, _ in widths} == {8}  # the last batch of 5 filled up
    assert len(widths) == 3 and min(w for _, w in widths) < SEQ
    assert all(w % 8 == 0 for _, w in widths)


def test_restore_sees_each_batch_before_it_is_stored():
    x = {"padding_mask": np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]])}
    out = outputs_by_length(lambda b: {"mask": b["padding_mask"]}, x, 2, multiple=1,
                            restore=lambda name, v: np.pad(v, [(0, 0), (0, 4 - v.shape[1])]))
    np.testing.assert_array_equal(out["mask"], x["padding_mask"])
