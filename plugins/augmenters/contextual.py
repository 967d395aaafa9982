import dataclasses
from typing import Annotated
from typing import Literal
from typing import Optional

import numpy as np

from kdplug.config import PositiveInt
from kdplug.config import Probability
from kdplug.config import Range
from kdplug.data import Augmenter
from kdplug.data import detokenize
from kdplug.data import is_special
from kdplug.data import is_word
from kdplug.data import match_case
from kdplug.data import tokenize
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.storage import fingerprint_path

# The TinyBERT reference code's `StopWordsList` (data_augmentation.py of
# huawei-noah/Pretrained-Language-Model): NLTK's English stop words plus
# "'s" and "'re", without its question words (what, which, who, whom, when,
# where, why, how), as in the reference: 173 words. Such words are never
# replaced.
REFERENCE_STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours
yourself yourselves he him his himself she she's her hers herself it it's its
itself they them their theirs themselves this that that'll these those am is
are was were be been being have has had having do does did doing a an the and
but if or because as until while of at by for with about against between into
through during before after above below to from up down in out on off over
under again further then once here there all any both each few more most other
some such no nor not only own same so than too very s t can will just don don't
should should've now d ll m o re ve y ain aren aren't couldn couldn't didn
didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn
mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't
weren weren't won won't wouldn wouldn't 's 're
""".split())


def stop_word_set(source):
    """The stop words of `stop_words: <source>` (lower case).

    `reference`: `REFERENCE_STOP_WORDS`; `spacy`: spaCy's English list
    (`spacy.lang.en.stop_words.STOP_WORDS`, needs the `spacy` extra);
    `none`: no stop words (every word may be replaced, kdplug 0.1).
    """
    if source == "reference":
        return REFERENCE_STOP_WORDS
    if source == "none":
        return frozenset()
    if source == "spacy":
        try:
            from spacy.lang.en.stop_words import STOP_WORDS
        except ImportError as e:
            raise KdplugError(
                "augmenter 'contextual': stop_words: spacy needs spaCy "
                "(pip install 'kdplug[spacy]'); or use stop_words: reference"
            ) from e
        return frozenset(w.lower() for w in STOP_WORDS)
    raise KdplugError(
        f"augmenter 'contextual': unknown stop_words {source!r}; known: "
        "reference, spacy, none")


class ContextualAugmenter(Augmenter):
    """TinyBERT's contextual word replacement (Jiao et al. 2019, Alg. 1).

    For every word of a text that is a single WordPiece and not a stop
    word, the word is masked in the (otherwise unchanged) text and a masked
    language model's top-K predictions at the mask become its candidates;
    each sample then replaces each such word, with probability `p_replace`,
    by a uniformly drawn candidate. Candidates are computed once per text
    and reused by every sample.

    As in the reference code (`_masked_language_model` of TinyBERT's
    `data_augmentation.py`), the MLM reads the masked text and the original
    text as a sentence pair, `[CLS] masked [SEP] original [SEP]` with
    segment ids 0 up to the first `[SEP]` and 1 after it, so the prediction
    at the mask sees the word it replaces (`pair_with_original: true`). The
    reference skips the words of its `StopWordsList` (NLTK's English list,
    `REFERENCE_STOP_WORDS`; `stop_words: reference`).

    Deviations from the paper: words of several WordPieces are kept as they
    are (the paper draws their candidates from GloVe neighbours, which are
    not available offline), and candidates exclude the word itself,
    punctuation, `##` pieces and special tokens, so a replacement always
    changes the word. With the pair input each of the two segments holds at
    most `(sequence_length - 3) // 2` WordPieces (the reference truncates
    the pair at 512); words past them are kept.

    Config:
        preset: a local keras-hub preset or Hugging Face folder holding a
            BERT masked LM *with* its MLM head (loaded with
            `keras_hub.models.BertMaskedLM.from_preset`).
        p_replace: probability of replacing each word (the paper: 0.4).
        top_k: candidates per word (the paper: 15).
        stop_words: words never replaced: `reference` (the reference
            code's list), `spacy` (spaCy's English list) or `none` (kdplug
            0.1). Compared in lower case.
        pair_with_original: feed `[CLS] masked [SEP] original [SEP]` (the
            reference) rather than `[CLS] masked [SEP]` (kdplug 0.1).
        sequence_length: WordPieces the MLM sees per masked copy (both
            segments and the three special tokens with the pair input).
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
      # kdplug 0.1's candidates: every word, the masked text alone
      - {name: contextual, n: 20, preset: /models/bert-base-uncased,
         stop_words: none, pair_with_original: false}
    ```
    """

    name = "contextual"
    description = "masked-LM top-K word replacement (TinyBERT, Jiao et al. 2019)"
    path_fields = ("preset",)

    @dataclasses.dataclass
    class Config:
        preset: Optional[str] = None
        p_replace: Probability = 0.4
        top_k: PositiveInt = 15
        stop_words: Literal["reference", "spacy", "none"] = "reference"
        pair_with_original: bool = True
        sequence_length: Annotated[int, Range(3)] = 128
        batch_size: PositiveInt = 32

        def __post_init__(self):
            if self.pair_with_original and self.sequence_length < 5:
                raise ConfigError("must be >= 5 with pair_with_original",
                                  field="sequence_length", value=self.sequence_length)

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
        stop = stop_word_set(self.config.stop_words)
        split = [tokenize(t)[0] for t in todo]
        words = sorted({tok for tokens in split for tok in tokens})
        pieces = dict(zip(words, _to_lists(tokenizer(words))))
        # (text index, token index, token ids, mask position, the word's id,
        #  segment ids)
        rows = []
        for t, tokens in enumerate(split):
            rows.extend(self._masked_rows(t, tokens, pieces, tokenizer, special,
                                          unk, stop))
        found = {(t, i): [] for t, i, *_ in rows}
        width = min(len(vocab), 4 * self.config.top_k + 16)
        for start in range(0, len(rows), self.config.batch_size):
            batch = rows[start:start + self.config.batch_size]
            top = self._top_ids(model, batch, width)
            for (t, i, _, _, original, _), ranked in zip(batch, top):
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

    def _masked_rows(self, t, tokens, pieces, tokenizer, special, unk, stop):
        """One MLM input per replaceable word of one text.

        `[CLS] masked [SEP] original [SEP]` (segments 0 then 1) with
        `pair_with_original`, else `[CLS] masked [SEP]`; the text's pieces
        are cut to what fits, and words cut off get no row.
        """
        cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
        if self.config.pair_with_original:
            budget = (self.config.sequence_length - 3) // 2
        else:
            budget = self.config.sequence_length - 2
        body, positions = [], []
        for token in tokens:
            positions.append(1 + len(body))  # after [CLS]
            body.extend(pieces[token])
        body = body[:budget]
        rows = []
        for i, token in enumerate(tokens):
            p = pieces[token]
            if (not is_word(token) or token.lower() in stop or len(p) != 1
                    or p[0] == unk or p[0] in special
                    or positions[i] > len(body)):
                continue
            masked = [cls, *body, sep]
            masked[positions[i]] = tokenizer.mask_token_id
            segments = [0] * len(masked)
            if self.config.pair_with_original:
                masked = masked + body + [sep]
                segments = segments + [1] * (len(body) + 1)
            rows.append((t, i, masked, positions[i], p[0], segments))
        return rows

    def fingerprint(self):
        if self.masked_lm is not None:
            from kdplug.teacher import teacher_fingerprint

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
        segment_ids = np.zeros((size, length), "int32")
        padding_mask = np.zeros((size, length), "int32")
        mask_positions = np.zeros((size, 1), "int32")
        for row, (_, _, ids, position, _, segments) in enumerate(batch):
            token_ids[row, :len(ids)] = ids
            segment_ids[row, :len(ids)] = segments
            padding_mask[row, :len(ids)] = 1
            mask_positions[row, 0] = position
        inputs = {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": padding_mask,
            "mask_positions": mask_positions,
        }
        if self.run_eagerly:
            top = _top_k(model, inputs, width)
        else:
            if self._predict is None:
                self._predict = tf.function(
                    lambda x: _top_k(model, x, width), reduce_retracing=True,
                    autograph=False)
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
