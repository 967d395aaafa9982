"""QA windows with real keras-hub tokenizers of each family, by hand."""

import io

import pytest

from kdplug.data.qa_windows import qa_windows, word_tokenizer
from kdplug.data.squad_examples import QAExample

keras_hub = pytest.importorskip("keras_hub")


def test_wordpiece_bert():
    wp = keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat",
                    "##s", "who", "?"], lowercase=True)
    ex = QAExample("q", "Who?", "The cats sat", (("cats", 4),))
    w = qa_windows([ex], word_tokenizer(wp), 10, 0, cls_id=2, sep_id=3)
    assert w.token_ids.tolist() == [[2, 8, 9, 3, 4, 5, 7, 6, 3, 0]]
    assert (w.start_positions[0], w.end_positions[0]) == (5, 6)
    assert w.offsets[0, 4:8].tolist() == [[0, 3], [4, 8], [4, 8], [9, 12]]


def test_byte_level_bpe_roberta():
    vocab = {"<s>": 0, "</s>": 1, "<pad>": 2, "t": 3, "h": 4, "e": 5, "Ġ": 6,
             "c": 7, "a": 8, "Ġc": 9, "Ġca": 10, "Ġcat": 11, "th": 12,
             "the": 13, "w": 14, "o": 15, "?": 16}
    bpe = keras_hub.tokenizers.BytePairTokenizer(
        vocabulary=vocab, merges=["t h", "th e", "Ġ c", "Ġc a", "Ġca t"])
    ex = QAExample("q", "who?", "the cat", (("cat", 4),))
    w = qa_windows([ex], word_tokenizer(bpe, byte_level=True), 10, 0,
                   cls_id=0, sep_id=1, pad_id=2)
    # <s> w h o ? </s> the Ġcat </s> <pad>: "cat" as " cat" -> one piece
    assert w.token_ids.tolist() == [[0, 14, 4, 15, 16, 1, 13, 11, 1, 2]]
    assert (w.start_positions[0], w.end_positions[0]) == (7, 7)
    assert w.offsets[0, 6:8].tolist() == [[0, 3], [4, 7]]


def test_sentencepiece_albert():
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["the cat sat on the mat", "who sat"] * 20),
        model_writer=model, vocab_size=10, model_type="word",
        pad_id=0, unk_id=1, bos_id=2, eos_id=3)
    sp = keras_hub.tokenizers.SentencePieceTokenizer(proto=model.getvalue())
    ex = QAExample("q", "who", "the  mat sat", (("mat", 5),))
    w = qa_windows([ex], word_tokenizer(sp), 10, 0, cls_id=2, sep_id=3)
    ids = [sp.token_to_id(p) for p in ("▁who", "▁the", "▁mat", "▁sat")]
    assert w.token_ids.tolist() == [[2, ids[0], 3, ids[1], ids[2], ids[3], 3,
                                     0, 0, 0]]
    assert (w.start_positions[0], w.end_positions[0]) == (4, 4)
    assert w.offsets[0, 3:6].tolist() == [[0, 3], [5, 8], [9, 12]]
