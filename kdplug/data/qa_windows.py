"""SQuAD examples as model inputs: `[CLS] question [SEP] context window
[SEP]` windows in the keras-hub BERT preprocessor layout, with the answer's
start and end token of each window and each token's character span in the
context (so a decoded span maps back to text).

Character to token mapping follows BERT's run_squad.py: the context is split
into whitespace words with their character offsets and each word is
tokenized alone, so every piece carries its word's character span. This
works for any tokenizer that can tokenize one word: WordPiece (BERT),
byte-level BPE (RoBERTa; non-first words are tokenized with a leading space,
as RoBERTa sees them inside a sentence, `word_tokenizer(byte_level=True)`)
and SentencePiece (ALBERT, XLM-R; each word gets its own "▁" piece, as it
does in a sentence). An answer that starts or ends inside a word snaps to
the whole word (its first piece to its last piece); the decoded text is then
the whole word. No TensorFlow here: `tokenize` is any callable.
"""

import bisect
import dataclasses

import numpy as np

from kdplug import keys
from kdplug.errors import DataError

__all__ = ["QAWindows", "context_words", "qa_windows", "word_tokenizer"]

NO_SPAN = (-1, -1)


@dataclasses.dataclass
class QAWindows:
    """Windows of many examples, one row per window.

    Args:
        token_ids: int32 (windows, sequence_length).
        segment_ids: int32, 0 for [CLS] question [SEP], 1 for context [SEP].
        padding_mask: bool, True on real tokens.
        start_positions: int32 (windows,), the answer's first token; 0 (the
            [CLS] token) when the answer is not wholly in this window or the
            question is unanswerable (run_squad's convention).
        end_positions: int32 (windows,), the answer's last token (0 likewise).
        example_index: int32 (windows,), the example each window belongs to.
        offsets: int32 (windows, sequence_length, 2), each token's
            (char_start, char_end) in its context; (-1, -1) outside the
            context part.
        context_spans: int32 (windows, 3), the window's context part as
            (char_start, char_end, first word index) of the context: the
            window's text is `context[char_start:char_end]`.

    Examples:
        >>> w = qa_windows([], lambda text, i: [], 8, 2, cls_id=1, sep_id=2)
        >>> w.token_ids.shape
        (0, 8)
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    offsets: np.ndarray
    context_spans: np.ndarray

    def inputs(self):
        """The keras-hub backbone inputs as a dict of arrays."""
        return {keys.TOKEN_IDS: self.token_ids,
                keys.SEGMENT_IDS: self.segment_ids,
                keys.PADDING_MASK: self.padding_mask}


def context_words(context):
    """Whitespace words of a context with their character spans.

    Args:
        context: the text.

    Returns:
        A list of (word, char_start, char_end).

    Examples:
        >>> context_words(" in  Paris.")
        [('in', 1, 3), ('Paris.', 5, 11)]
    """
    words, start = [], None
    for i, ch in enumerate(context + " "):
        if ch.isspace():
            if start is not None:
                words.append((context[start:i], start, i))
                start = None
        elif start is None:
            start = i
    return words


def word_tokenizer(tokenizer, byte_level=False):
    """A `tokenize(text, word_index)` callable from a keras-hub tokenizer.

    Args:
        tokenizer: a keras-hub tokenizer (called on one string, giving ids).
        byte_level: True for byte-level BPE (RoBERTa, GPT-2): words after the
            first are tokenized as " " + word, as they appear in a sentence.

    Returns:
        The callable; word_index 0 (and a whole question) gets no space.

    Examples:
        >>> tok = word_tokenizer(lambda s: [len(s)], byte_level=True)
        >>> tok("ab", 0), tok("ab", 1)
        ([2], [3])
    """
    def tokenize(text, word_index):
        if byte_level and word_index > 0:
            text = " " + text
        ids = tokenizer(text)
        ids = ids.numpy() if hasattr(ids, "numpy") else ids
        return [int(i) for i in np.asarray(ids).reshape(-1)]
    return tokenize


def _answer_words(words, char_start, char_end):
    """First and last word overlapping [char_start, char_end)."""
    hit = [k for k, (_, s, e) in enumerate(words) if s < char_end and e > char_start]
    return (hit[0], hit[-1]) if hit else (None, None)


def _word_start_at_or_before(word_starts, piece):
    """The last word's first piece at or before `piece`."""
    return word_starts[bisect.bisect_right(word_starts, piece) - 1]


def qa_windows(examples, tokenize, sequence_length, stride, cls_id, sep_id,
               pad_id=0, whole_words=False, special_tokens=3):
    """Split examples into windows of model inputs.

    Args:
        examples: `kdplug.data.QAExample`s (the first gold answer is the
            training target, as in run_squad).
        tokenize: `tokenize(text, word_index) -> list of ids`
            (`word_tokenizer`); the question is tokenized whole with index 0.
        sequence_length: tokens per window, special tokens included.
        stride: overlap, in context tokens, between consecutive windows of a
            long context (the Hugging Face `stride`); the next window starts
            `room - stride` tokens later, `room` the context tokens a window
            holds (at least 1 later).
        cls_id: the [CLS] (or <s>) id.
        sep_id: the [SEP] (or </s>) id.
        pad_id: the padding id.
        whole_words: windows start and end at word boundaries (a word
            longer than a whole window is the only one cut): each window's
            context part is then a slice of the context text
            (`context_spans`) that a tokenizer given that slice splits into
            the same pieces, which is how a run feeds windows to its
            models. False: windows cut between any two pieces (run_squad's
            `doc_stride`).
        special_tokens: the special tokens the model's encoder puts around
            a question and a context (3 in BERT's layout; 4 in RoBERTa's,
            `<s> q </s></s> c </s>`): a window holds `sequence_length -
            special_tokens - len(question)` context tokens, so the encoder
            never cuts it. The layout built here is BERT's either way.

    Returns:
        A `QAWindows`.

    Raises:
        DataError: a question leaves no room for a context token, or
            `stride` leaves a window no new one (names its id); a negative
            stride.

    Examples:
        >>> from kdplug.data.squad_examples import QAExample
        >>> vocab = {"where": 5, "?": 6, "in": 7, "paris": 8}
        >>> tok = lambda text, i: [vocab[w] for w in text.lower().split()]
        >>> w = qa_windows([QAExample("q", "where ?", "in Paris", (("Paris", 3),))],
        ...                tok, 8, 1, cls_id=1, sep_id=2)
        >>> w.token_ids[0].tolist(), int(w.start_positions[0])
        ([1, 5, 6, 2, 7, 8, 2, 0], 5)
    """
    if stride < 0:
        raise DataError(f"qa_windows: stride must be 0 or more (got {stride})")
    fields = [f.name for f in dataclasses.fields(QAWindows)]
    rows = {name: [] for name in fields}
    for index, example in enumerate(examples):
        question = list(tokenize(example.question, 0))
        room = sequence_length - len(question) - special_tokens
        if room < 1:
            raise DataError(
                f"question {example.id!r} ({example.row or 'row ' + str(index + 1)})"
                f": {len(question)} tokens leave no room for the context in a "
                f"sequence of {sequence_length}; shorten it or raise "
                f"sequence_length")
        if stride >= room:
            raise DataError(
                f"question {example.id!r} ({example.row or 'row ' + str(index + 1)})"
                f": windows would overlap by {stride} tokens and hold only {room} "
                f"context tokens each; lower the overlap (data.window_overlap) "
                f"below {room} or raise sequence_length")
        words = context_words(example.context)
        pieces, spans, first_piece, last_piece = [], [], [], []
        for k, (word, start, end) in enumerate(words):
            ids = list(tokenize(word, k))
            first_piece.append(len(pieces))
            pieces.extend(ids)
            spans.extend([(start, end)] * len(ids))
            last_piece.append(len(pieces) - 1)
        answer = None
        if example.answers and not example.is_impossible:
            text, char_start = example.answers[0]
            first, last = _answer_words(words, char_start, char_start + len(text))
            if first is not None and last_piece[last] >= first_piece[first]:
                answer = (first_piece[first], last_piece[last])
        step = max(1, room - stride)
        word_starts = first_piece + [len(pieces)]
        window_start = 0
        while True:
            length = min(room, len(pieces) - window_start)
            if whole_words:
                end = _word_start_at_or_before(word_starts, window_start + length)
                if end > window_start:
                    length = end - window_start
            context_ids = pieces[window_start:window_start + length]
            ids = [cls_id, *question, sep_id, *context_ids, sep_id]
            real = len(ids)
            offset = len(question) + 2
            token_offsets = ([NO_SPAN] * offset
                             + spans[window_start:window_start + length]
                             + [NO_SPAN] * (sequence_length - offset - length))
            start = end = 0
            if (answer is not None and answer[0] >= window_start
                    and answer[1] < window_start + length):
                start = answer[0] - window_start + offset
                end = answer[1] - window_start + offset
            rows["token_ids"].append(ids + [pad_id] * (sequence_length - real))
            rows["segment_ids"].append([0] * offset + [1] * (length + 1)
                                       + [0] * (sequence_length - real))
            rows["padding_mask"].append([True] * real
                                        + [False] * (sequence_length - real))
            rows["start_positions"].append(start)
            rows["end_positions"].append(end)
            rows["example_index"].append(index)
            rows["offsets"].append(token_offsets)
            window_spans = spans[window_start:window_start + length] or [(0, 0)]
            rows["context_spans"].append(
                (window_spans[0][0], window_spans[-1][1],
                 bisect.bisect_right(first_piece, window_start) - 1))
            if window_start + length >= len(pieces):
                break
            following = window_start + step
            if whole_words:
                snapped = _word_start_at_or_before(word_starts, following)
                following = (snapped if snapped > window_start else
                             word_starts[bisect.bisect_right(word_starts, window_start)])
            window_start = following
    return QAWindows(
        token_ids=np.asarray(rows["token_ids"], "int32").reshape(-1, sequence_length),
        segment_ids=np.asarray(rows["segment_ids"], "int32").reshape(-1, sequence_length),
        padding_mask=np.asarray(rows["padding_mask"], bool).reshape(-1, sequence_length),
        start_positions=np.asarray(rows["start_positions"], "int32"),
        end_positions=np.asarray(rows["end_positions"], "int32"),
        example_index=np.asarray(rows["example_index"], "int32"),
        offsets=np.asarray(rows["offsets"], "int32").reshape(-1, sequence_length, 2),
        context_spans=np.asarray(rows["context_spans"], "int32").reshape(-1, 3))
