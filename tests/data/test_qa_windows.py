"""QA windows: layout, stride, answer positions and character offsets."""

import numpy as np
import pytest

from kdplug.data.qa_windows import context_words, qa_windows, word_tokenizer
from kdplug.data.squad_examples import QAExample
from kdplug.errors import DataError

CLS, SEP = 1, 2
VOCAB = {"who": 10, "?": 11, "the": 12, "cat": 13, "sat": 14, "on": 15,
         "mat": 16, "##s": 17, "a": 18}


def wordpiece(text, index):
    """A tiny greedy WordPiece over VOCAB (lowercase, whole words or +##s)."""
    ids = []
    for word in text.lower().split():
        if word in VOCAB:
            ids.append(VOCAB[word])
        else:
            assert word.endswith("s") and word[:-1] in VOCAB
            ids += [VOCAB[word[:-1]], VOCAB["##s"]]
    return ids


def test_context_words_offsets():
    assert context_words("the  cats sat") == [
        ("the", 0, 3), ("cats", 5, 9), ("sat", 10, 13)]


def test_one_window_layout_and_offsets():
    ex = QAExample("q", "who ?", "the cats sat", (("cats", 4),))
    w = qa_windows([ex], wordpiece, 10, 2, CLS, SEP)
    # [CLS] who ? [SEP] the cat ##s sat [SEP] pad
    assert w.token_ids.tolist() == [[1, 10, 11, 2, 12, 13, 17, 14, 2, 0]]
    assert w.segment_ids.tolist() == [[0, 0, 0, 0, 1, 1, 1, 1, 1, 0]]
    assert w.padding_mask[0].tolist() == [True] * 9 + [False]
    # cats = pieces 5, 6
    assert (w.start_positions[0], w.end_positions[0]) == (5, 6)
    assert w.offsets[0].tolist() == [[-1, -1]] * 4 + [
        [0, 3], [4, 8], [4, 8], [9, 12]] + [[-1, -1]] * 2


def test_long_context_windows_with_stride():
    # 5 context pieces: the cat sat on a ; question 1 piece -> room = 8-1-3 = 4
    ex = QAExample("q", "who", "the cat sat on a", (("on", 12),))
    w = qa_windows([ex], wordpiece, 8, 2, CLS, SEP)
    # step = 4 - 2 = 2: windows start at pieces 0 and 2 (2+3 reaches the end)
    assert w.token_ids.tolist() == [[1, 10, 2, 12, 13, 14, 15, 2],
                                    [1, 10, 2, 14, 15, 18, 2, 0]]
    # "on" is piece 3: window 0 at 3+3 = 6; window 1 at 3-2+3 = 4
    assert w.start_positions.tolist() == [6, 4]
    assert w.end_positions.tolist() == [6, 4]
    assert w.example_index.tolist() == [0, 0]
    assert w.offsets[1, 3:6].tolist() == [[8, 11], [12, 14], [15, 16]]


def test_answer_outside_window_and_unanswerable_point_at_cls():
    ex = QAExample("q", "who", "the cat sat on a", (("the", 0),))
    no = QAExample("n", "who", "the mat", (), True)
    w = qa_windows([ex, no], wordpiece, 8, 0, CLS, SEP)
    # stride 0: windows at 0 and 4; "the" only in window 0
    assert w.start_positions.tolist() == [3, 0, 0]
    assert w.example_index.tolist() == [0, 0, 1]


def test_mid_word_answer_snaps_to_word():
    ex = QAExample("q", "who", "the cats sat", (("at", 6),))  # inside "cats"
    w = qa_windows([ex], wordpiece, 10, 0, CLS, SEP)
    # cats = pieces 1, 2 -> tokens 4, 5
    assert (w.start_positions[0], w.end_positions[0]) == (4, 5)


def test_question_too_long_names_id():
    ex = QAExample("long-q", "who who who who who", "the cat", row="row 7")
    with pytest.raises(DataError, match=r"question 'long-q' \(row 7\)"):
        qa_windows([ex], wordpiece, 8, 0, CLS, SEP)


def test_byte_level_prefix_space():
    seen = []

    def bpe(text):
        seen.append(text)
        return np.array([len(text)])

    ex = QAExample("q", "who is", "the cat", (("cat", 4),))
    w = qa_windows([ex], word_tokenizer(bpe, byte_level=True), 8, 0, CLS, SEP)
    assert seen == ["who is", "the", " cat"]
    assert w.token_ids[0].tolist() == [1, 6, 2, 3, 4, 2, 0, 0]
    assert w.start_positions[0] == 4 and w.offsets[0, 4].tolist() == [4, 7]


def test_inputs_are_backbone_keys():
    ex = QAExample("q", "who", "the cat", (("cat", 4),))
    inputs = qa_windows([ex], wordpiece, 8, 0, CLS, SEP).inputs()
    assert sorted(inputs) == ["padding_mask", "segment_ids", "token_ids"]


def test_whole_word_windows_never_cut_a_word():
    # pieces: the cat ##s sat; question 1 piece, length 6 -> room 2.
    ex = QAExample("q", "who", "the cats sat", (("cats", 4),))
    cut = qa_windows([ex], wordpiece, 6, 0, CLS, SEP)
    assert cut.token_ids[0].tolist() == [1, 10, 2, 12, 13, 2]  # "cats" cut
    w = qa_windows([ex], wordpiece, 6, 0, CLS, SEP, whole_words=True)
    # window 0 stops before "cats" (2 pieces would pass room); step 2 from
    # piece 0 lands inside "cats" (piece 2) and snaps back to its start (1)
    assert w.token_ids.tolist() == [[1, 10, 2, 12, 2, 0],
                                    [1, 10, 2, 13, 17, 2],
                                    [1, 10, 2, 14, 2, 0]]
    assert w.context_spans.tolist() == [[0, 3, 0], [4, 8, 1], [9, 12, 2]]
    # the answer lies whole in window 1 only
    assert w.start_positions.tolist() == [0, 3, 0]
    assert w.end_positions.tolist() == [0, 4, 0]
    # each window's text is a slice of the context tokenized alike
    for row, (start, end, _) in zip(w.token_ids, w.context_spans):
        assert wordpiece(ex.context[start:end], 0) == [
            int(i) for i in row[3:] if i not in (0, SEP)]


def test_an_overlap_as_long_as_the_window_names_the_question():
    ex = QAExample("q7", "who", "the cat sat on a", (("on", 12),), row="line 3")
    with pytest.raises(DataError, match=r"'q7' \(line 3\): windows would overlap by 4 "
                                        r"tokens and hold only 4"):
        qa_windows([ex], wordpiece, 8, 4, CLS, SEP)
