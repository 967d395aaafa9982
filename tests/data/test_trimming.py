import numpy as np
import pytest

from kdplug import keys
from kdplug import testing
from kdplug.data.trimming import real_lengths
from kdplug.data.trimming import token_axes
from kdplug.data.trimming import trim_to_longest
from kdplug.models import BiLstmClassifier


def padded(lengths, seq):
    """`(ids, mask)`: ids 5, 6, ... on the first `length` positions, 0 after."""
    mask = (np.arange(seq)[None, :] < np.asarray(lengths)[:, None]).astype("int32")
    return mask * (np.arange(seq) + 5), mask


def test_token_axes():
    assert token_axes("embeddings") == token_axes("hidden/3") == (1,)
    assert token_axes("attention/1") == token_axes("attention_scores/12") == (2, 3)
    for tap in ("logits", "pooled", "cls/2", "targets"):
        assert token_axes(tap) == ()


def test_every_group_is_cut_by_its_own_mask_and_teacher_features_follow_the_tokens():
    ids, mask = padded([5, 9], 32)  # teacher encoding: longest 9 -> 16
    a_ids, a_mask = padded([3, 2], 32)  # first sentence: 3 -> 8
    b_ids, b_mask = padded([7, 17], 32)  # second sentence: 17 -> 24
    w_ids, w_mask = padded([4, 1], 20)  # words: 4 -> 8
    wb_ids, wb_mask = padded([2, 13], 20)  # the pair's second text in words: 13 -> 16
    s_ids, s_mask = padded([11, 6], 32)  # a student's own tokenizer: 11 -> 16
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(2, 32, 3)).astype("float32")
    attention = rng.normal(size=(2, 2, 32, 32)).astype("float32")
    x = {"token_ids": ids, "segment_ids": mask * 0, "padding_mask": mask,
         "token_ids_a": a_ids, "padding_mask_a": a_mask,
         "token_ids_b": b_ids, "padding_mask_b": b_mask,
         "word_ids": w_ids, "word_padding_mask": w_mask,
         "word_ids_b": wb_ids, "word_padding_mask_b": wb_mask,
         "student/token_ids": s_ids, "student/segment_ids": s_mask * 0,
         "student/padding_mask": s_mask,
         keys.teacher_key("hidden/2"): hidden,
         keys.teacher_key("attention_scores/1"): attention,
         keys.teacher_key("logits"): hidden[:, 0, :2],
         keys.teacher_key("cls/1"): hidden[:, 0],
         "labels_like": np.ones((2, 32))}
    out = trim_to_longest(x, multiple=8)
    widths = {k: v.shape[1] for k, v in out.items()}
    assert widths == {
        "token_ids": 16, "segment_ids": 16, "padding_mask": 16,
        "token_ids_a": 8, "padding_mask_a": 8, "token_ids_b": 24, "padding_mask_b": 24,
        "word_ids": 8, "word_padding_mask": 8, "word_ids_b": 16, "word_padding_mask_b": 16,
        "student/token_ids": 16, "student/segment_ids": 16, "student/padding_mask": 16,
        "teacher/hidden/2": 16, "teacher/attention_scores/1": 2,
        "teacher/logits": 2, "teacher/cls/1": 3, "labels_like": 32}
    assert out["teacher/attention_scores/1"].shape == (2, 2, 16, 16)
    np.testing.assert_array_equal(out["teacher/hidden/2"], hidden[:, :16])
    np.testing.assert_array_equal(out["teacher/attention_scores/1"], attention[:, :, :16, :16])
    np.testing.assert_array_equal(out["token_ids_b"], b_ids[:, :24])
    # nothing real is cut: every group keeps all its real positions
    for mask_key in keys.PADDED_GROUPS:
        assert int(np.sum(out[mask_key])) == int(np.sum(x[mask_key]))
    np.testing.assert_array_equal(real_lengths(x),
                                  [5 + 3 + 7 + 4 + 2 + 11, 9 + 2 + 17 + 1 + 13 + 6])


@pytest.mark.parametrize("multiple,width", [(1, 9), (5, 10), (8, 16), (64, 32)])
def test_lengths_round_up_to_the_multiple_and_never_beyond_the_padding(multiple, width):
    ids, mask = padded([5, 9], 32)
    out = trim_to_longest({"token_ids": ids, "padding_mask": mask}, multiple)
    assert out["token_ids"].shape == (2, width)
    empty = trim_to_longest({"word_ids": ids * 0, "word_padding_mask": mask * 0}, 8)
    assert empty["word_ids"].shape == (2, 1)  # at least one position


def test_tiny_bert_gives_the_same_outputs_on_the_trimmed_batch():
    model = testing.tiny_bert_classifier(num_layers=2, seed=3)
    x, _ = testing.toy_arrays(num_examples=8, sequence_length=32, seed=4)
    x["padding_mask"][:, 13:] = 0  # longest 13 -> trimmed to 16
    x["token_ids"] *= x["padding_mask"]
    short = trim_to_longest(x, 8)
    assert short["token_ids"].shape == (8, 16)
    names = ["logits", "pooled", "cls/2", "hidden/2", "attention/1"]
    full = model.taps(x, names, training=False)
    cut = model.taps(short, names, training=False)
    for name in ("logits", "pooled", "cls/2"):
        np.testing.assert_allclose(cut[name], full[name], rtol=1e-5, atol=1e-5)
    real = x["padding_mask"][:, :16, None].astype(bool)
    np.testing.assert_allclose(np.where(real, cut["hidden/2"], 0),
                               np.where(real, np.asarray(full["hidden/2"])[:, :16], 0),
                               rtol=1e-5, atol=1e-5)
    # attention to real keys, from real queries, is the same (rows sum to 1)
    keys_real = x["padding_mask"][:, None, None, :16].astype(bool) & real[:, None, :, :]
    np.testing.assert_allclose(np.where(keys_real, cut["attention/1"], 0),
                               np.where(keys_real, np.asarray(full["attention/1"])
                                        [:, :, :16, :16], 0), rtol=1e-5, atol=1e-6)


def test_bilstm_on_word_ids_gives_the_same_logits_on_the_trimmed_batch():
    model = BiLstmClassifier(vocabulary_size=40, num_classes=2, embedding_dim=8,
                             lstm_units=8, hidden_dim=8, input="word_ids",
                             pooling="final_states")
    ids, mask = padded([3, 11, 6], 24)
    x = {"word_ids": ids % 40, "word_padding_mask": mask}
    short = trim_to_longest(x, 8)
    assert short["word_ids"].shape == (3, 16)
    np.testing.assert_allclose(model(short, training=False), model(x, training=False),
                               rtol=1e-5, atol=1e-6)
