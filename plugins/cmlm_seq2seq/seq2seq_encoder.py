import hashlib

import numpy as np

from kdplug import keys
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk


def as_id_lists(tokenized):
    """A tokenizer's output (list, ragged or dense tensor) as lists of ints."""
    if hasattr(tokenized, "to_list"):
        tokenized = tokenized.to_list()
    elif hasattr(tokenized, "numpy"):
        tokenized = tokenized.numpy().tolist()
    return [[int(i) for i in ids] for ids in tokenized]


class Seq2SeqEncoder:
    """Turns (source, target) texts into the arrays of the C-MLM teacher and
    of the seq2seq student, with the teacher's word-piece tokenizer.

    Every text is cut to its budget once (`max_source_length` source word
    pieces, `max_target_length` target word pieces), so the teacher's
    target positions and the student's labels are the same pieces:

    ```
    teacher   [CLS] s_1..s_a [SEP] t_1 .. t_b [SEP]     segment 0 .. 0 | 1 .. 1
    student   encoder  s_1..s_a
              decoder  [CLS] t_1 .. t_b                 (inputs)
              labels   t_1 .. t_b [SEP]                 (-1 on padding)
    ```

    Label `j` (`0 <= j <= b`) is the teacher's position `a + 2 + j`; the
    final [SEP] is the end of the sentence (the reference code's EOS, which
    the teacher also learns to predict).

    Args:
        tokenizer: the teacher's keras-hub `BertTokenizer`.
        max_source_length: int.
        max_target_length: int.
        teacher_length: int. The teacher's padded input length
            (`data.sequence_length`, at least `max_source_length +
            max_target_length + 3`).

    Examples:

    ```python
    encoder = Seq2SeqEncoder(tokenizer, 48, 64, 128)
    x, y = encoder.student_arrays(["hello world"], ["Hello, world!"])
    teacher = encoder.teacher_arrays(["hello world"], ["Hello, world!"])
    ```
    """

    def __init__(self, tokenizer, max_source_length, max_target_length,
                 teacher_length):
        if max_source_length + max_target_length + 3 > teacher_length:
            raise ValueError(
                f"teacher_length {teacher_length} < max_source_length "
                f"{max_source_length} + max_target_length {max_target_length} + 3")
        self.tokenizer = tokenizer
        self.max_source_length = int(max_source_length)
        self.max_target_length = int(max_target_length)
        self.teacher_length = int(teacher_length)
        self.cls_id = int(tokenizer.cls_token_id)
        self.sep_id = int(tokenizer.sep_token_id)
        self.pad_id = int(tokenizer.pad_token_id)
        self.mask_id = int(tokenizer.mask_token_id)

    @property
    def decoder_length(self):
        return self.max_target_length + 1

    def tokenize(self, texts):
        """Word-piece ids of each text (no special tokens, not cut)."""
        texts = list(texts)
        if not texts:
            return []
        return as_id_lists(self.tokenizer(texts))

    def pieces(self, texts, limit):
        return [ids[:limit] for ids in self.tokenize(texts)]

    def source_arrays(self, sources):
        """`{encoder_token_ids, encoder_padding_mask}` (int32)."""
        ids = _pad(self.pieces(sources, self.max_source_length),
                   self.max_source_length, self.pad_id)
        return {sk.ENCODER_TOKEN_IDS: ids,
                sk.ENCODER_PADDING_MASK: (ids != self.pad_id).astype("int32")}

    def student_arrays(self, sources, targets):
        """`(features, labels)`: the four student inputs and the labels
        `(n, max_target_length + 1)` (-1 on padding), int32."""
        features = self.source_arrays(sources)
        targets = self.pieces(targets, self.max_target_length)
        decoder = _pad([[self.cls_id] + t for t in targets], self.decoder_length,
                       self.pad_id)
        labels = _pad([t + [self.sep_id] for t in targets], self.decoder_length, -1)
        features[sk.DECODER_TOKEN_IDS] = decoder
        features[sk.DECODER_PADDING_MASK] = (labels >= 0).astype("int32")
        return features, labels

    def teacher_arrays(self, sources, targets):
        """The C-MLM teacher's inputs `{token_ids, segment_ids, padding_mask}`
        `(n, teacher_length)` and `target_mask` (1 on the target's pieces and
        its final [SEP]: the positions C-MLM masks and predicts)."""
        sources = self.pieces(sources, self.max_source_length)
        targets = self.pieces(targets, self.max_target_length)
        n, length = len(sources), self.teacher_length
        token_ids = np.full((n, length), self.pad_id, "int32")
        segment_ids = np.zeros((n, length), "int32")
        target_mask = np.zeros((n, length), "int32")
        for i, (s, t) in enumerate(zip(sources, targets)):
            row = [self.cls_id] + s + [self.sep_id] + t + [self.sep_id]
            token_ids[i, :len(row)] = row
            start = len(s) + 2
            segment_ids[i, start:len(row)] = 1
            target_mask[i, start:len(row)] = 1
        return {
            keys.TOKEN_IDS: token_ids,
            keys.SEGMENT_IDS: segment_ids,
            keys.PADDING_MASK: (token_ids != self.pad_id).astype("int32"),
            sk.TARGET_MASK: target_mask,
        }

    def detokenize(self, id_lists):
        """Texts of word-piece id lists (special tokens and padding dropped)."""
        special = {self.cls_id, self.sep_id, self.pad_id}
        id_lists = [[i for i in ids if i not in special] for ids in id_lists]
        if not id_lists:
            return []
        texts = self.tokenizer.detokenize(id_lists)
        if hasattr(texts, "numpy"):
            texts = texts.numpy().tolist()
        return [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in texts]

    def normalize(self, texts):
        """Texts as the tokenizer sees them (e.g. lower-cased, punctuation
        split off), uncut: the references generated text is compared with."""
        return self.detokenize(self.tokenize(texts))

    def fingerprint(self):
        """What the arrays depend on (for cache keys)."""
        vocabulary = "\n".join(self.tokenizer.get_vocabulary())
        return {
            "tokenizer": type(self.tokenizer).__name__,
            "lowercase": getattr(self.tokenizer, "lowercase", None),
            "vocabulary": hashlib.sha256(vocabulary.encode("utf-8")).hexdigest(),
            "max_source_length": self.max_source_length,
            "max_target_length": self.max_target_length,
            "teacher_length": self.teacher_length,
        }


def _pad(rows, length, value):
    out = np.full((len(rows), length), value, "int32")
    for i, row in enumerate(rows):
        out[i, :len(row)] = row[:length]
    return out
