import numpy as np
import pytest

from kdplug_plugins.cmlm_seq2seq.seq2seq_encoder import Seq2SeqEncoder
from kdplug_plugins.cmlm_seq2seq.top_k_extractor import TopKExtractor
from kdplug_plugins.cmlm_seq2seq.top_k_extractor import soft_label_scores

from cmlm_helpers import mlm  # noqa: F401  (a fixture)
from cmlm_helpers import tokenizer  # noqa: F401  (a fixture)

SOURCES = ["good movie", "the plot was dull", "fun"]
TARGETS = ["movie good", "dull was plot the", "fun film is nice"]
K = 3


def direct(mlm, arrays, row, masked_positions, position):
    """The MLM's top-K at `position` of `row` with `masked_positions` masked,
    computed by one plain call."""
    ids = arrays["token_ids"][row:row + 1].copy()
    ids[0, masked_positions] = 4  # [MASK]
    logits = np.asarray(mlm({
        "token_ids": ids, "segment_ids": arrays["segment_ids"][row:row + 1],
        "padding_mask": arrays["padding_mask"][row:row + 1],
        "mask_positions": np.array([[position]], "int32")}, training=False))[0, 0]
    p = np.exp(logits - logits.max())
    p /= p.sum()
    top = np.argsort(-p)[:K]
    return top, p[top]


@pytest.fixture(scope="module")
def arrays(tokenizer):
    return Seq2SeqEncoder(tokenizer, 4, 5, 14).teacher_arrays(SOURCES, TARGETS)


@pytest.mark.slow
def test_one_position_per_pass_equals_a_direct_call_with_that_position_masked(
        mlm, arrays, tokenizer):
    positions = 6  # max_target_length + 1: every pass masks one position
    ids, probs = TopKExtractor(mlm, tokenizer.mask_token_id, positions,
                               passes=positions, top_k=K, batch_size=2).extract(arrays)
    assert ids.shape == probs.shape == (3, positions, K)
    assert ids.dtype == np.int32 and probs.dtype == np.float16
    starts = arrays["target_mask"].argmax(1)
    counts = arrays["target_mask"].sum(1)
    for row, j in [(0, 0), (0, 2), (1, 4), (2, 1), (2, 4)]:
        assert j < counts[row]
        top, p = direct(mlm, arrays, row, [starts[row] + j], starts[row] + j)
        assert ids[row, j].tolist() == top.tolist()
        np.testing.assert_allclose(probs[row, j], p, rtol=2e-3)
    # past the target (and its [SEP]): zeros
    assert counts[0] == 3 and not probs[0, 3:].any() and not ids[0, 3:].any()


def test_several_positions_per_pass_equal_a_direct_call_pass_by_pass(
        mlm, arrays, tokenizer):
    ids, probs = TopKExtractor(mlm, tokenizer.mask_token_id, 6, passes=2,
                               top_k=K).extract(arrays)
    start, count = arrays["target_mask"][1].argmax(), arrays["target_mask"][1].sum()
    assert count == 5
    for j in range(count):  # pass j % 2 masks positions j % 2, j % 2 + 2, ...
        together = [start + i for i in range(j % 2, count, 2)]
        top, p = direct(mlm, arrays, 1, together, start + j)
        assert ids[1, j].tolist() == top.tolist()
        np.testing.assert_allclose(probs[1, j], p, rtol=2e-3)
    assert TopKExtractor(mlm, 4, 6, passes=4).pass_positions(1).tolist() == [1, 5]


def test_soft_label_scores_by_hand():
    ids = np.array([[[5, 7, 1], [2, 9, 1], [4, 3, 1], [0, 0, 0]],
                    [[8, 6, 1], [3, 3, 3], [0, 0, 0], [0, 0, 0]]])
    labels = np.array([[5, 9, 6, -1], [8, 3, -1, -1]])
    # top-1 right at (0, 0), (1, 0), (1, 1): 3 of 5; gold among the K: 4 of 5
    assert soft_label_scores(ids, labels) == {"accuracy": 0.6, "top_k_recall": 0.8}
    # a label-less position never counts, even when its ids are 0 and label -1
    assert soft_label_scores(ids[:, :1], np.full((2, 1), -1)) == {
        "accuracy": 0.0, "top_k_recall": 0.0}


def test_soft_label_accuracy_is_the_teachers_under_the_extractions_masks(
        mlm, tokenizer):
    """`soft_label_scores`' accuracy equals the masked-token accuracy of the
    teacher called with the extraction's masks (pass p: the target
    positions j mod passes = p), pass by pass, by a plain argmax. The toy
    teacher is random, so half the labels are set to its own predictions
    (the accuracy is then neither 0 nor 1)."""
    encoder = Seq2SeqEncoder(tokenizer, 4, 5, 14)
    arrays = encoder.teacher_arrays(SOURCES, TARGETS)
    gold = encoder.student_arrays(SOURCES, TARGETS)[1]
    passes = 2
    ids, _ = TopKExtractor(mlm, tokenizer.mask_token_id, 6, passes=passes,
                           top_k=K).extract(arrays)
    predicted = np.full_like(gold, -1)
    for row in range(len(SOURCES)):
        start, count = arrays["target_mask"][row].argmax(), arrays["target_mask"][row].sum()
        for p in range(passes):
            js = list(range(p, count, passes))
            masked = arrays["token_ids"][row:row + 1].copy()
            masked[0, [start + j for j in js]] = tokenizer.mask_token_id
            predicted[row, js] = np.asarray(mlm({
                "token_ids": masked, "segment_ids": arrays["segment_ids"][row:row + 1],
                "padding_mask": arrays["padding_mask"][row:row + 1],
                "mask_positions": np.array([[start + j for j in js]], "int32")},
                training=False))[0].argmax(-1)
    valid = gold >= 0
    assert (predicted[valid] >= 0).all() and (predicted[~valid] == -1).all()
    labels = np.where(np.arange(gold.shape[1]) % 2 == 0, predicted, gold)
    accuracy = (predicted == labels)[valid].mean()
    assert 0.0 < accuracy < 1.0
    scores = soft_label_scores(ids, labels)
    assert scores["accuracy"] == pytest.approx(accuracy)
    assert scores["accuracy"] <= scores["top_k_recall"] <= 1.0


@pytest.mark.slow
def test_batches_of_similar_length_cut_to_their_longest_give_the_same_labels(
        mlm, arrays, tokenizer):
    """The same pairs padded to 40 positions, in batches of 2: sorted by
    length (7, 8, 11 pieces), the teacher reads the two shortest (rows 0 and
    2) cut to 8 and the longest alone, cut to 16 (11 rounded up to 8), and
    gives the soft labels of the 14-position encoding in the input's order;
    progress is reported after each batch."""
    long = Seq2SeqEncoder(tokenizer, 4, 5, 40).teacher_arrays(SOURCES, TARGETS)
    assert long["token_ids"].shape[1] == 40
    assert long["padding_mask"].sum(1).tolist() == [7, 11, 8]
    extractor = TopKExtractor(mlm, tokenizer.mask_token_id, 6, passes=2, top_k=K,
                              batch_size=2)
    seen, step = [], extractor._step
    extractor._step = lambda x: (seen.append(
        (tuple(x["token_ids"].shape), np.asarray(x["token_ids"])[:, 1].tolist())), step(x))[1]
    done = []
    ids, probs = extractor.extract(long, progress=lambda d, n: done.append((d, n)))
    assert done == [(2, 3), (3, 3)]  # examples after each batch
    first_tokens = long["token_ids"][:, 1].tolist()
    assert seen[0] == ((2, 8), [first_tokens[0], first_tokens[2]])  # rows 0 and 2
    assert seen[-1] == ((1, 16), [first_tokens[1]])
    want_ids, want_probs = TopKExtractor(mlm, tokenizer.mask_token_id, 6, passes=2,
                                         top_k=K).extract(arrays)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(probs.astype("float32"), want_probs.astype("float32"),
                               atol=2e-3)


def test_soft_labels_cache_is_a_listed_teacher_output_entry(tmp_path):
    from kdplug.teacher.cache_admin import list_entries
    from kdplug_plugins.cmlm_seq2seq.top_k_cache import TopKCache

    ids = np.arange(2 * 6 * K, dtype="int32").reshape(2, 6, K)
    probs = np.full((2, 6, K), 0.25, "float16")
    cache = TopKCache({"teacher": "abc", "top_k": K}, root=str(tmp_path))
    assert cache.load() is None
    cache.save(ids, probs)
    loaded = TopKCache({"teacher": "abc", "top_k": K}, root=str(tmp_path)).load()
    assert (loaded[0] == ids).all() and loaded[1].dtype == np.float16
    assert TopKCache({"teacher": "abd", "top_k": K}, root=str(tmp_path)).load() is None
    [entry] = list_entries(str(tmp_path))
    assert (entry["kind"], entry["key"], entry["status"]) == (
        "teacher-outputs", cache.key, "ok")
    assert entry["detail"] == "2 examples, taps topk_ids,topk_probs, float16, seq 6"
