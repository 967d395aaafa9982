"""`TextEncoder.encode_examples`: small sets are tokenised eagerly, larger
ones through the traced `batch_encoder`, and both give the same ids."""

import numpy as np
import pytest

from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.data import text_encoder
from kdplug.testing import families
from kdplug.testing import toy_sentences

SEQ = 24


def encode_both_ways(encoder, examples, monkeypatch, chunk_size=4096):
    """`(eager, traced)` features of `examples`."""
    calls = []
    traced = encoder.batch_encoder
    monkeypatch.setattr(encoder, "batch_encoder", lambda *a: calls.append(a) or traced(*a))
    eager = encoder.encode_examples(examples, chunk_size=chunk_size)
    assert not calls  # a few texts: no tracing
    monkeypatch.setattr(text_encoder, "EAGER_TEXTS", 0)
    through_graph = encoder.encode_examples(examples, chunk_size=chunk_size)
    assert calls  # more than EAGER_TEXTS: the traced function
    return eager, through_graph


def assert_same(a, b):
    assert sorted(a) == sorted(b)
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


# One family per kind of tokenizer: WordPiece, byte-level BPE, SentencePiece
# (the first two take 3-19 s on 2 busy cores: the full suite only).
@pytest.mark.parametrize("family", [pytest.param("bert", marks=pytest.mark.slow),
                                    pytest.param("roberta", marks=pytest.mark.slow),
                                    "albert"])
def test_eager_and_traced_encodings_are_the_same(family, tmp_path, monkeypatch):
    texts, labels = toy_sentences(40)
    pairs = list(reversed(texts))
    encoder = TextEncoder(families.tiny_tokenizer(family, tmp_path), SEQ, pair_inputs=True)
    # pairs: the joint encoding and each sentence on its own; chunks of 16
    eager, traced = encode_both_ways(encoder, Examples(texts, labels, pairs), monkeypatch,
                                     chunk_size=16)
    assert_same(eager, traced)
    assert eager["token_ids"].shape == eager["token_ids_b"].shape == (40, SEQ)
    assert (eager["segment_ids"] == 1).any() and (eager["padding_mask"] == 0).any()


def test_single_texts_and_an_empty_split(tmp_path, monkeypatch):
    texts, labels = toy_sentences(10)
    encoder = TextEncoder(families.tiny_tokenizer("bert", tmp_path), SEQ)
    assert_same(*encode_both_ways(encoder, Examples(texts, labels), monkeypatch))
    # no texts: (0, SEQ) arrays (through the traced function, which keeps
    # the batch axis of an empty batch)
    empty = encoder.encode_examples(Examples([], np.zeros(0, "int64")))
    assert {k: v.shape for k, v in empty.items()} == {
        "token_ids": (0, SEQ), "segment_ids": (0, SEQ), "padding_mask": (0, SEQ)}
