import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug_plugins.cmlm_seq2seq.seq2seq_length_buckets import Seq2SeqLengthBuckets
from kdplug_plugins.cmlm_seq2seq.token_cross_entropy import TokenCrossEntropy
from kdplug_plugins.cmlm_seq2seq.top_k_soft_cross_entropy import TopKSoftCrossEntropy

from test_cmlm_students import build

SOURCE, TARGET, K, VOCAB = 12, 11, 3, 27
IDS, PROBS = keys.teacher_key("topk_ids"), keys.teacher_key("topk_probs")


def pairs(source_lengths, target_lengths, seed=0):
    """Padded student arrays, the teacher's top-K soft labels and labels;
    `row` numbers the examples."""
    rng = np.random.default_rng(seed)
    n = len(source_lengths)
    src = np.zeros((n, SOURCE), "int32")
    dec = np.zeros((n, TARGET + 1), "int32")
    labels = np.full((n, TARGET + 1), -1, "int32")
    ids = np.zeros((n, TARGET + 1, K), "int32")
    probs = np.zeros((n, TARGET + 1, K), "float16")
    for i, (s, t) in enumerate(zip(source_lengths, target_lengths)):
        src[i, :s] = rng.integers(5, VOCAB, s)
        target = rng.integers(5, VOCAB, t)
        dec[i, :t + 1] = [2, *target]
        labels[i, :t + 1] = [*target, 3]
        ids[i, :t + 1] = rng.integers(5, VOCAB, (t + 1, K))
        p = rng.random((t + 1, K)) + 0.1
        probs[i, :t + 1] = p / p.sum(-1, keepdims=True)
    features = {"encoder_token_ids": src, "encoder_padding_mask": (src > 0).astype("int32"),
                "decoder_token_ids": dec, "decoder_padding_mask": (dec > 0).astype("int32"),
                IDS: ids, PROBS: probs, "row": np.arange(n, dtype="int32")}
    return features, labels


def losses(student, features, labels):
    """Per-example KD and MLE terms of `student` on one batch."""
    x = {k: v for k, v in features.items() if k != "row"}
    logits = {"logits": student(x, training=False)}
    teacher = {"topk_ids": x[IDS], "topk_probs": x[PROBS]}
    batch = {keys.LABELS: labels}
    return np.stack([np.asarray(term.call(teacher, logits, batch)) for term in (
        TopKSoftCrossEntropy(temperature=2.0), TokenCrossEntropy(label_smoothing=0.1))], 1)


def test_batches_are_sorted_and_cut_and_the_losses_do_not_change():
    features, labels = pairs([2, 11, 3, 10, 9, 2, 12, 4], [1, 10, 2, 11, 8, 3, 9, 2])
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    batches = list(Seq2SeqLengthBuckets(window=4, multiple=4).batch(ds, 2, 8))
    assert len(batches) == 4
    student = build("seq2seq-transformer", VOCAB, SOURCE, TARGET)
    padded = losses(student, features, labels)
    rows = []
    for x, y in batches:
        x = {k: v.numpy() for k, v in x.items()}
        src, dec = x["encoder_padding_mask"].sum(1), x["decoder_padding_mask"].sum(1)
        # each part cut to the batch's longest, rounded up to 4
        assert x["encoder_token_ids"].shape[1] == -(-src.max() // 4) * 4
        width = -(-dec.max() // 4) * 4
        for key in ("decoder_token_ids", IDS, PROBS):
            assert x[key].shape[1] == width
        assert y.shape[1] == width
        # the labels, soft labels and inputs are the row's own
        np.testing.assert_array_equal(y, labels[x["row"], :width])
        np.testing.assert_array_equal(x[IDS], features[IDS][x["row"], :width])
        np.testing.assert_allclose(losses(student, x, y.numpy()), padded[x["row"]],
                                   rtol=1e-5, atol=1e-6)
        rows.extend(x["row"])
    assert sorted(rows) == list(range(8))
    # sorted by source + target length within each window of 4 pairs
    order = [features["encoder_padding_mask"][r].sum() + features["decoder_padding_mask"][r].sum()
             for r in rows]
    assert order[:4] == sorted(order[:4]) and order[4:] == sorted(order[4:])
    assert batches[0][0]["decoder_token_ids"].shape[1] < TARGET + 1
