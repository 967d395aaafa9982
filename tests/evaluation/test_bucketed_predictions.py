"""Prediction passes in length buckets (`predict_outputs(...,
length_buckets=)`, `kdplug.data.length_buckets.read_by_length`): the padded
pass's outputs row by row, in the dataset's order with its labels, and the
same metrics, for sentence logits, per-token logits (token classification)
and start/end logits (extractive QA). A run's evaluation both ways:
tests/run/test_bucketed_evaluation.py."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug import testing
from kdplug.data.length_buckets import LengthBuckets
from kdplug.data.length_buckets import read_by_length
from kdplug.errors import KdplugError
from kdplug.evaluation.collapse import collapse_check
from kdplug.evaluation.measure import predict_outputs
from kdplug.evaluation.task_metrics import classification_metrics
from kdplug.evaluation.token_metrics import token_metrics
from kdplug.models import BertClassifier

SEQ = 32
BUCKETS = LengthBuckets(multiple=8)
ATOL = 1e-5  # float rounding: a cut batch multiplies shorter matrices


def batches(x, y, batch_size):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)


def short_arrays(num_examples, longest, seed):
    """`toy_arrays` of sentences of at most `longest` tokens, padded to SEQ
    (so every bucketed batch is cut below SEQ)."""
    x, y = testing.toy_arrays(num_examples=num_examples, sequence_length=longest,
                              seed=seed)
    pad = [(0, 0), (0, SEQ - longest)]
    return {k: np.pad(v, pad) for k, v in x.items()}, y


def per_token_model(num_classes):
    backbone = testing.tiny_backbone(num_layers=1, max_sequence_length=SEQ)
    return BertClassifier(backbone, num_classes, dropout=0.0, per_token=True)


def test_sentence_logits_and_metrics_equal_the_padded_pass():
    x, y = testing.toy_arrays(num_examples=37, sequence_length=SEQ, seed=3)
    model = testing.tiny_bert_classifier(num_layers=1, max_sequence_length=SEQ)
    ds = batches(x, y, 8)  # 37 = 4 x 8 + 5: the last batch filled up
    padded, labels = predict_outputs(model, ds)
    bucketed, same = predict_outputs(model, ds, length_buckets=BUCKETS)
    assert bucketed.dtype == np.float32 and bucketed.shape == padded.shape
    np.testing.assert_allclose(bucketed, padded, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(same, labels)  # the dataset's order
    names = ["accuracy", "f1_macro", "mcc"]
    assert (classification_metrics(names, bucketed, same)
            == classification_metrics(names, padded, labels))
    assert collapse_check("class", bucketed, same) == collapse_check("class", padded, labels)


def test_per_token_logits_are_padded_back_and_token_metrics_equal():
    x, _ = short_arrays(29, longest=20, seed=4)
    real = x["padding_mask"] == 1
    tags = np.random.default_rng(0).integers(0, 3, size=real.shape)
    labels = np.where(real, tags, -1).astype("int32")
    labels[:, 0] = -1  # [CLS]
    model = per_token_model(3)
    ds = batches(x, labels, 8)
    padded, _ = predict_outputs(model, ds)
    bucketed, same = predict_outputs(model, ds, length_buckets=BUCKETS)
    assert bucketed.shape == padded.shape == (29, SEQ, 3)
    np.testing.assert_allclose(bucketed[real], padded[real], rtol=0, atol=ATOL)
    # past every cut (20 tokens at most -> widths of 24 at most): 0, where
    # the padded pass holds the model's output for the padding token
    np.testing.assert_array_equal(bucketed[:, 24:], 0.0)
    assert np.abs(padded[:, 24:]).max() > 0
    names = ["token_accuracy", "entity_f1"]
    tag_names = ["O", "B-X", "I-X"]
    assert (token_metrics(names, bucketed, same, tag_names)
            == token_metrics(names, padded, labels, tag_names))
    assert collapse_check("tags", bucketed, same) == collapse_check("tags", padded, labels)


def test_extractive_qa_answers_and_metrics_equal_the_padded_pass():
    keras_hub = pytest.importorskip("keras_hub")
    from kdplug.config.sections import DataConfig
    from kdplug.data.squad_examples import QAExample
    from kdplug.data.text_encoder import TextEncoder
    from kdplug.tasks import get_task

    words = testing.toy_vocabulary()[5:]
    rng = np.random.default_rng(5)
    questions = []
    for i in range(24):  # contexts of 2-14 words: windows of many lengths
        context = " ".join(rng.choice(words, size=int(rng.integers(2, 15))))
        answer = context.split()[-1]
        questions.append(QAExample(f"q{i}", str(rng.choice(words)), context,
                                   ((answer, context.rindex(answer)),)))
    encoder = TextEncoder(keras_hub.tokenizers.BertTokenizer(
        vocabulary=testing.toy_vocabulary()), SEQ)
    qa = get_task("extractive_qa", DataConfig(path="qa.jsonl"))
    windows = qa.windows(questions, encoder)
    ds = encoder.dataset(windows, 8)
    model = per_token_model(2)
    padded, labels = predict_outputs(model, ds)
    bucketed, same = predict_outputs(model, ds, length_buckets=BUCKETS)
    lengths = labels[:, 3]
    assert lengths.max() <= 24 and len(set(lengths.tolist())) > 5
    real = np.arange(SEQ)[None, :] < lengths[:, None]
    np.testing.assert_allclose(bucketed[real], padded[real], rtol=0, atol=ATOL)
    names = ["f1", "exact_match"]
    assert qa.metrics(names, bucketed, same) == qa.metrics(names, padded, labels)
    assert ({q: (a.text, a.window) for q, a in qa.answers(bucketed, same).items()}
            == {q: (a.text, a.window) for q, a in qa.answers(padded, labels).items()})
    assert collapse_check("span", bucketed, same) == collapse_check("span", padded, labels)


def test_read_by_length_keeps_the_order_and_cuts_every_batch():
    lengths = np.array([9, 2, 17, 5, 30, 3, 12, 1, 25, 7, 4])
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype("int32")
    # a word-id student's inputs alone: sorted by their own mask
    x = {"word_ids": mask * 7, "word_padding_mask": mask}
    widths = []

    def forward(batch):
        widths.append(tuple(batch["word_ids"].shape))
        real = keras.ops.sum(batch["word_padding_mask"], axis=1)
        return {"real": real, "hidden/0": keras.ops.cast(batch["word_ids"], "float32")}

    out, labels = read_by_length(forward, batches(x, np.arange(11), 4), multiple=8)
    np.testing.assert_array_equal(out["real"], lengths)  # each row in its place
    np.testing.assert_array_equal(labels, np.arange(11))
    np.testing.assert_array_equal(out["hidden/0"], x["word_ids"])  # padded back
    # sorted by length: [1, 2, 3, 4], [5, 7, 9, 12], [17, 25, 30] (+ 1 repeated)
    assert widths == [(4, 8), (4, 16), (4, 32)]


def test_read_by_length_needs_padded_batches():
    x, y = testing.toy_arrays(num_examples=16, sequence_length=SEQ, seed=1)
    cut = LengthBuckets(window=4).batch(  # 16 sorted by length: widths 8 to 32
        tf.data.Dataset.from_tensor_slices((x, y)), 4, 16)
    assert len({b["token_ids"].shape[1] for b, _ in cut}) > 1
    with pytest.raises(KdplugError, match="padded to one length.*already cut"):
        read_by_length(lambda batch: {}, cut)
