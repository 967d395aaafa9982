import dataclasses
from typing import Optional

import numpy as np

from kdplug.data.augmentation import Augmenter
from kdplug.data.augmentation import detokenize
from kdplug.data.augmentation import is_special
from kdplug.data.augmentation import is_word
from kdplug.data.augmentation import match_case
from kdplug.data.augmentation import tokenize
from kdplug.errors import KdplugError
from kdplug.storage import fingerprint_path


class ContextualAugmenter(Augmenter):
    """TinyBERT's contextual word replacement (Jiao et al. 2019, Alg. 1).

    For every word of a text that is a single WordPiece, the word is masked
    in the (otherwise unchanged) text and a masked language model's top-K
    predictions become its candidates; each sample then replaces each word,
    with probability `p_replace`, by a uniformly drawn candidate.
    Candidates are computed once per text and reused by every sample.

    Deviations from the paper: words of several WordPieces are kept as they
    are (the paper draws their candidates from GloVe neighbours, which are
    not available offline), and candidates exclude the word itself,
    punctuation, `##` pieces and special tokens, so a replacement always
    changes the word.

    Config:
        preset: a local keras-hub preset or Hugging Face folder holding a
            BERT masked LM *with* its MLM head (loaded with
            `keras_hub.models.BertMaskedLM.from_preset`).
        p_replace: probability of replacing each word (the paper: 0.4).
        top_k: candidates per word (the paper: 15).
        sequence_length: WordPieces the MLM sees per text.
        batch_size: masked copies per forward pass.

    Args:
        config: the `Config`.
        masked_lm: a ready `keras_hub.models.BertMaskedLM` (instead of
            `preset`); its preprocessor's tokenizer is used unless
            `tokenizer` is given.
        tokenizer: a `keras_hub.tokenizers.WordPieceTokenizer`.
        run_eagerly: call the MLM eagerly (no `tf.function` tracing: faster
            for a handful of texts, slower for a real data set).

    Examples:

    ```yaml
    augment:
      - {name: contextual, n: 20, preset: /models/bert-base-uncased}
    ```
    """

    name = "contextual"
    description = "masked-LM top-K word replacement (TinyBERT, Jiao et al. 2019)"
    path_fields = ("preset",)

    @dataclasses.dataclass
    class Config:
        preset: Optional[str] = None
        p_replace: float = 0.4
        top_k: int = 15
        sequence_length: int = 128
        batch_size: int = 32

        def __post_init__(self):
            if not 0.0 <= self.p_replace <= 1.0:
                raise ValueError(f"p_replace must be in [0, 1], got {self.p_replace}")
            for name in ("top_k", "batch_size"):
                if getattr(self, name) < 1:
                    raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
            if self.sequence_length < 3:
                raise ValueError(
                    f"sequence_length must be >= 3, got {self.sequence_length}")

    def __init__(self, config=None, masked_lm=None, tokenizer=None,
                 run_eagerly=False):
        super().__init__(config)
        self.masked_lm = masked_lm
        self.tokenizer = tokenizer
        self.run_eagerly = bool(run_eagerly)
        self.candidates = {}
        self._predict = None

    def augment(self, texts, rng):
        self.prepare(texts)
        out = []
        for text in texts:
            tokens, gaps = tokenize(text)
            for i, (token, options) in enumerate(zip(tokens, self.candidates[text])):
                if not is_word(token):
                    continue
                if rng.random() < self.config.p_replace and options:
                    choice = options[int(rng.integers(len(options)))]
                    tokens[i] = match_case(choice, token)
            out.append(detokenize(tokens, gaps))
        return out

    def prepare(self, texts):
        """Computes (once) every word's candidates for these texts."""
        todo = list(dict.fromkeys(t for t in texts if t not in self.candidates))
        if not todo:
            return
        model, tokenizer = self._load()
        vocab = tokenizer.get_vocabulary()
        special = {tokenizer.cls_token_id, tokenizer.sep_token_id,
                   tokenizer.pad_token_id, tokenizer.mask_token_id}
        unk = tokenizer.token_to_id(tokenizer.oov_token) if hasattr(
            tokenizer, "oov_token") else None
        split = [tokenize(t)[0] for t in todo]
        words = sorted({tok for tokens in split for tok in tokens})
        pieces = dict(zip(words, _to_lists(tokenizer(words))))
        rows = []  # (text index, token index, token ids, mask position)
        limit = self.config.sequence_length - 1
        for t, tokens in enumerate(split):
            ids, positions = [tokenizer.cls_token_id], []
            for token in tokens:
                positions.append(len(ids))
                ids.extend(pieces[token])
            ids = ids[:limit] + [tokenizer.sep_token_id]
            for i, token in enumerate(tokens):
                p = pieces[token]
                if (is_word(token) and len(p) == 1 and p[0] != unk
                        and p[0] not in special and positions[i] < limit):
                    masked = list(ids)
                    masked[positions[i]] = tokenizer.mask_token_id
                    rows.append((t, i, masked, positions[i], p[0]))
        found = {(t, i): [] for t, i, *_ in rows}
        width = min(len(vocab), 4 * self.config.top_k + 16)
        for start in range(0, len(rows), self.config.batch_size):
            batch = rows[start:start + self.config.batch_size]
            top = self._top_ids(model, batch, width)
            for (t, i, _, _, original), ranked in zip(batch, top):
                keep = found[(t, i)]
                for index in ranked:
                    piece = vocab[index]
                    if (index != original and index not in special
                            and not piece.startswith("##")
                            and is_word(piece) and not is_special(piece)):
                        keep.append(piece)
                        if len(keep) == self.config.top_k:
                            break
        for t, (text, tokens) in enumerate(zip(todo, split)):
            self.candidates[text] = [found.get((t, i), []) for i in range(len(tokens))]

    def fingerprint(self):
        if self.masked_lm is not None:
            from kdplug.teacher.fingerprints import teacher_fingerprint

            weights = teacher_fingerprint(self.masked_lm)
        else:
            weights = fingerprint_path(self.config.preset or "")
        return f"{super().fingerprint()}:{weights}"

    def _load(self):
        if self.masked_lm is None:
            if not self.config.preset:
                raise KdplugError(
                    "augmenter 'contextual' needs `preset:` (a local folder with "
                    "a BERT masked LM, MLM head included)")
            import keras_hub

            try:
                self.masked_lm = keras_hub.models.BertMaskedLM.from_preset(
                    self.config.preset)
            except Exception as e:  # surface a clear message, keep the cause
                raise KdplugError(
                    f"augmenter 'contextual': cannot load a BERT masked LM from "
                    f"{self.config.preset!r}: {e}") from e
        if self.tokenizer is None:
            preprocessor = getattr(self.masked_lm, "preprocessor", None)
            self.tokenizer = getattr(preprocessor, "tokenizer", None)
            if self.tokenizer is None:
                raise KdplugError(
                    "augmenter 'contextual': the masked LM has no preprocessor; "
                    "pass tokenizer=")
        return self.masked_lm, self.tokenizer

    def _top_ids(self, model, batch, width):
        import keras  # imported when the MLM first runs, not with the plugin
        import tensorflow as tf

        length = self.config.sequence_length
        size = len(batch) if self.run_eagerly else self.config.batch_size
        token_ids = np.zeros((size, length), "int32")
        token_ids[:] = self.tokenizer.pad_token_id
        mask_positions = np.zeros((size, 1), "int32")
        for row, (_, _, ids, position, _) in enumerate(batch):
            token_ids[row, :len(ids)] = ids
            mask_positions[row, 0] = position
        inputs = {
            "token_ids": token_ids,
            "segment_ids": np.zeros_like(token_ids),
            "padding_mask": (token_ids != self.tokenizer.pad_token_id).astype("int32"),
            "mask_positions": mask_positions,
        }
        if self.run_eagerly:
            top = _top_k(model, inputs, width)
        else:
            if self._predict is None:
                self._predict = tf.function(
                    lambda x: _top_k(model, x, width), reduce_retracing=True)
            top = self._predict({k: tf.constant(v) for k, v in inputs.items()})
        return keras.ops.convert_to_numpy(top)[:len(batch)].tolist()


def _top_k(model, inputs, width):
    import keras

    logits = model(inputs, training=False)[:, 0, :]
    return keras.ops.top_k(logits, k=width, sorted=True)[1]


def _to_lists(ids):
    """Token ids per word as lists (the tokenizer may give lists or ragged)."""
    if hasattr(ids, "to_list"):
        return ids.to_list()
    return [list(np.asarray(row).reshape(-1).tolist()) for row in ids]
