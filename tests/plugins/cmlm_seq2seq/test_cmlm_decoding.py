import math

import keras
import numpy as np
import pytest

from kdplug_plugins.cmlm_seq2seq.seq2seq_decoder import Seq2SeqDecoder
from kdplug_plugins.cmlm_seq2seq.seq2seq_gru import Seq2SeqGru
from kdplug_plugins.cmlm_seq2seq.seq2seq_transformer import Seq2SeqTransformer
from kdplug_plugins.cmlm_seq2seq.text_metrics import copy_source_scores
from kdplug_plugins.cmlm_seq2seq.text_metrics import corpus_bleu
from kdplug_plugins.cmlm_seq2seq.text_metrics import exact_match

CLS, SEP, PAD = 2, 3, 0


@pytest.fixture(scope="module")
def model_and_sources():
    keras.utils.set_random_seed(1)
    model = Seq2SeqTransformer(12, 4, 6, hidden_dim=8, num_encoder_layers=1,
                               num_decoder_layers=1, num_heads=2,
                               intermediate_dim=16, dropout=0.0)
    # a large bias against [SEP] and [PAD] makes the random model talk
    model.token_embedding.embeddings.assign(
        model.token_embedding.embeddings.numpy() * 20)
    src = np.random.default_rng(0).integers(5, 12, (5, 4)).astype("int32")
    src[:, 3:] = 0
    return model, {"encoder_token_ids": src,
                   "encoder_padding_mask": (src > 0).astype("int32")}


def greedy_by_hand(model, arrays):
    """Argmax step by step on the full model call, cut at the first [SEP]."""
    n, length = len(arrays["encoder_token_ids"]), model.decoder_length
    dec = np.zeros((n, length), "int32")
    dec[:, 0] = CLS
    for t in range(1, length):
        logits = np.asarray(model({**arrays, "decoder_token_ids": dec,
                                   "decoder_padding_mask": np.ones_like(dec)}))
        dec[:, t] = logits[:, t - 1].argmax(-1)
    out = []
    for row in dec[:, 1:].tolist():
        out.append(row[:row.index(SEP)] if SEP in row else row)
    return out


@pytest.mark.slow
def test_beam_of_width_one_equals_greedy_equals_argmax_by_hand(model_and_sources):
    model, arrays = model_and_sources
    greedy = Seq2SeqDecoder(model, CLS, SEP, PAD, "greedy").generate(arrays, 2)
    beam = Seq2SeqDecoder(model, CLS, SEP, PAD, "beam", beam_width=1).generate(arrays, 2)
    assert greedy == beam
    assert greedy == greedy_by_hand(model, arrays)
    assert any(len(ids) > 1 for ids in greedy)


def test_cached_step_state_equals_the_full_prefix_decode(model_and_sources):
    """`decode_cached` on position t with the cache of positions < t gives
    `decode_states(...)[:, t]` of the whole prefix."""
    model, arrays = model_and_sources
    src, mask = arrays["encoder_token_ids"], arrays["encoder_padding_mask"].astype(bool)
    encoded = model.encode(src, mask)
    dec = np.random.default_rng(3).integers(4, 12, (5, model.decoder_length)).astype("int32")
    dec[:, 0] = CLS
    full = np.asarray(model.decode_states(encoded, mask, dec, np.ones_like(dec, bool)))
    fixed, moving = model.decoder_cache(encoded, mask)
    assert tuple(moving.shape) == (5, 1, 2, model.decoder_length, 2, 4)
    assert tuple(fixed.shape) == (5, 1, 2, 4, 2, 4)  # over the 4 source positions
    for t in range(model.decoder_length):
        state, moving = model.decode_cached(dec[:, t:t + 1], t, encoded, mask, fixed, moving)
        np.testing.assert_allclose(np.asarray(state)[:, 0], full[:, t], atol=1e-5)


@pytest.mark.slow
def test_gru_cached_step_equals_the_full_prefix_decode_and_decodes_the_same():
    keras.utils.set_random_seed(2)
    model = Seq2SeqGru(12, 4, 6, embedding_dim=8, units=8, dropout=0.0)
    model.token_embedding.embeddings.assign(model.token_embedding.embeddings.numpy() * 20)
    src = np.random.default_rng(4).integers(5, 12, (5, 4)).astype("int32")
    src[:, 3:] = 0
    mask = src > 0
    encoded = model.encode(src, mask)
    dec = np.random.default_rng(5).integers(4, 12, (5, model.decoder_length)).astype("int32")
    full = np.asarray(model.decode_states(encoded, mask, dec, np.ones_like(dec, bool)))
    fixed, moving = model.decoder_cache(encoded, mask)
    for t in range(model.decoder_length):
        state, moving = model.decode_cached(dec[:, t:t + 1], t, encoded, mask, fixed, moving)
        np.testing.assert_allclose(np.asarray(state)[:, 0], full[:, t], atol=1e-5)
    arrays = {"encoder_token_ids": src, "encoder_padding_mask": mask.astype("int32")}
    for strategy, width in (("greedy", 1), ("beam", 3)):
        np.testing.assert_array_equal(
            Seq2SeqDecoder(model, CLS, SEP, PAD, strategy, width).generate_ids(arrays, 2),
            Seq2SeqDecoder(model, CLS, SEP, PAD, strategy, width,
                           use_cache=False).generate_ids(arrays, 2))


@pytest.mark.slow
@pytest.mark.parametrize("strategy,width", [("greedy", 1), ("beam", 3)])
def test_cached_decoding_gives_the_same_tokens(model_and_sources, strategy, width):
    model, arrays = model_and_sources
    cached = Seq2SeqDecoder(model, CLS, SEP, PAD, strategy, width)
    full = Seq2SeqDecoder(model, CLS, SEP, PAD, strategy, width, use_cache=False)
    assert cached.use_cache and not full.use_cache
    np.testing.assert_array_equal(cached.generate_ids(arrays, 2), full.generate_ids(arrays, 2))


def test_batches_of_similar_length_keep_the_sources_order(model_and_sources):
    """Sources of 1 to 4 tokens in mixed order go to the decoding step in
    batches of 2 sorted by length (the last one padded with a repeat), and
    each output row is its own source's. The step is replaced by one whose
    buffer spells the source, so a row written to the wrong place shows."""
    model, _ = model_and_sources
    src = np.random.default_rng(4).integers(5, 12, (5, 4)).astype("int32")
    lengths = [4, 1, 3, 2, 4]
    for row, n in enumerate(lengths):
        src[row, n:] = 0
    arrays = {"encoder_token_ids": src, "encoder_padding_mask": (src > 0).astype("int32")}
    decoder = Seq2SeqDecoder(model, CLS, SEP, PAD, "greedy")
    batches = []

    def step(ids, mask):
        batches.append(mask.sum(axis=1).tolist())
        buffer = np.zeros((len(ids), model.decoder_length), "int32")
        buffer[:, 0], buffer[:, 1:5] = CLS, ids
        return buffer

    decoder._generate = step
    progress = []
    out = decoder.generate_ids(arrays, 2, progress=lambda *a: progress.append(a))
    assert batches == [[1, 2], [3, 4], [4, 4]]  # sorted; the last one padded
    assert progress == [(2, 5), (4, 5), (5, 5)]  # real rows, not the padding
    np.testing.assert_array_equal(out[:, 1:5], src)
    assert decoder.generate(arrays, 2)[1] == [src[1, 0]]  # cut at its padding


def test_wider_beams_return_sequences_for_every_source(model_and_sources):
    model, arrays = model_and_sources
    buffers = Seq2SeqDecoder(model, CLS, SEP, PAD, "beam", 3).generate_ids(arrays)
    assert buffers.shape == (5, 7) and (buffers[:, 0] == CLS).all()
    # after the end token a finished beam only adds padding
    for row in buffers.tolist():
        if SEP in row:
            assert set(row[row.index(SEP) + 1:]) <= {PAD}


def test_bleu_of_identical_text_is_100_and_exact_match():
    refs = ["the film is a mess , but a fun one .", "nothing here works at all"]
    assert corpus_bleu(refs, refs) == 100.0
    assert exact_match(refs, refs) == 1.0
    assert corpus_bleu(["the film is a mess", "nothing works"], refs) < 100.0
    assert exact_match([refs[0], "nothing  here works at all "], refs) == 1.0
    assert exact_match(["x", refs[1]], refs) == 0.5
    assert corpus_bleu(["", ""], refs) == 0.0


def test_copy_source_baseline_by_hand():
    """Copying the sources, both sides normalised (here lower-cased) as the
    students' references are. Corpus counts: hypothesis "the cat sat on
    the mat" against "the cat sat on the mat ." matches 6/6 unigrams, 5/5
    bigrams, 4/4 trigrams, 3/3 4-grams; "it was bad" against "it was not
    bad ." 3/3, 1/2, 0/1, none: precisions 9/9, 6/7, 4/5, 3/3; lengths 9
    against 12, brevity penalty exp(1 - 12/9)."""
    sources = ["the cat sat on the mat", "it was bad"]
    targets = ["The cat sat on the mat .", "It was not bad ."]
    lower = lambda texts: [t.lower() for t in texts]  # noqa: E731
    scores = copy_source_scores(sources, targets, lower)
    bleu = 100 * math.exp(1 - 12 / 9) * (6 / 7 * 4 / 5) ** 0.25  # 65.20
    assert scores["bleu"] == pytest.approx(bleu, abs=1e-4)
    assert scores["exact_match"] == 0.0
    # the normalisation is what makes a cased reference equal its copy
    assert copy_source_scores(["good film"], ["Good film"], lower)["exact_match"] == 1.0
    assert copy_source_scores(["good film"], ["Good film"], list)["exact_match"] == 0.0
