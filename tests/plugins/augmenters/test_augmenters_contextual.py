"""TinyBERT's contextual augmenter, on a tiny masked LM built here."""

import keras
import keras_hub
import numpy as np
import pytest

from kdplug.config import parse
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug_plugins.augmenters.contextual import REFERENCE_STOP_WORDS
from kdplug_plugins.augmenters.contextual import ContextualAugmenter
from kdplug_plugins.augmenters.contextual import stop_word_set

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "the", "film",
         "movie", "great", "good", "bad", "plot", "dull", ".", ",", "##s",
         "fun", "story", "is", "was"]
# The MLM head's output bias makes these its top predictions, in this order,
# whatever the input: "##s", "." and "[MASK]" must be filtered out.
RANKED = ["great", "##s", ".", "good", "[MASK]", "movie", "fun", "film"]


@pytest.fixture(scope="module")
def masked_lm():
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=VOCAB, lowercase=True)
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=16)
    preprocessor = keras_hub.models.BertMaskedLMPreprocessor(tokenizer,
                                                             sequence_length=16)
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor)
    bias = np.zeros(len(VOCAB), "float32")
    for rank, word in enumerate(RANKED):
        bias[VOCAB.index(word)] = 100.0 - 10 * rank
    model.masked_lm_head._bias.assign(bias)
    return model


def make(masked_lm, **options):
    options.setdefault("sequence_length", 16)
    return ContextualAugmenter(ContextualAugmenter.Config(**options),
                               masked_lm=masked_lm, run_eagerly=True)


def make_v01(masked_lm, **options):
    """kdplug 0.1's candidates: every word, the masked text alone."""
    options.setdefault("sequence_length", 16)
    options.setdefault("stop_words", "none")
    options.setdefault("pair_with_original", False)
    return ContextualAugmenter(ContextualAugmenter.Config(**options),
                               masked_lm=masked_lm, run_eagerly=True)


TEXTS = ["A great film.", "Films are fun, really", "Good plot"]


def test_candidates_are_the_mlm_top_k_single_piece_words(masked_lm):
    aug = make_v01(masked_lm, top_k=3)
    aug.prepare(TEXTS)
    assert aug.candidates == {
        # tokens: A, great, film, "."
        "A great film.": [["great", "good", "movie"], ["good", "movie", "fun"],
                          ["great", "good", "movie"], []],
        # "Films" is two pieces (film ##s), "are"/"really" are [UNK]: kept.
        "Films are fun, really": [[], [], ["great", "good", "movie"], [], []],
        "Good plot": [["great", "movie", "fun"], ["great", "good", "movie"]],
    }


def test_replacement_with_fixed_seed_and_rules(masked_lm):
    aug = make_v01(masked_lm, top_k=3, p_replace=1.0, batch_size=2)
    out = aug.augment(TEXTS, np.random.default_rng(0))
    assert out == ["Good good great.", "Films are movie, really", "Great movie"]
    half = make_v01(masked_lm, top_k=2, p_replace=0.5)
    g = np.random.default_rng(1)
    changed = 0
    for _ in range(200):
        out = half.augment(["A great film."], g)[0]
        assert out.endswith(".")
        a, great, film = out[:-1].split(" ")
        assert a in ("A", "Great", "Good") and great in ("great", "good", "movie")
        assert film in ("film", "great", "good")
        changed += (a != "A") + (great != "great") + (film != "film")
    assert abs(changed / 600 - 0.5) < 0.06
    never = make_v01(masked_lm, p_replace=0.0)
    assert never.augment(TEXTS, g) == TEXTS


def test_graph_mode_gives_the_same_candidates(masked_lm):
    eager = make(masked_lm, top_k=4)
    graph = ContextualAugmenter(ContextualAugmenter.Config(top_k=4, sequence_length=16,
                                                           batch_size=4),
                                masked_lm=masked_lm)
    eager.prepare(TEXTS)
    graph.prepare(TEXTS)
    assert graph.candidates == eager.candidates


def test_truncated_words_get_no_candidates(masked_lm):
    aug = make_v01(masked_lm, sequence_length=4)  # [CLS] a great [SEP]
    aug.prepare(["a great film"])
    assert [bool(c) for c in aug.candidates["a great film"]] == [True, True, False]
    # the pair input: (7 - 3) // 2 = 2 pieces per segment:
    # [CLS] a great [SEP] a great [SEP]
    aug = make(masked_lm, sequence_length=7, stop_words="none")
    aug.prepare(["a great film"])
    assert [bool(c) for c in aug.candidates["a great film"]] == [True, True, False]
    with pytest.raises(ConfigError, match=r"^sequence_length: must be >= 5 with "
                       r"pair_with_original \(got 4\)$"):
        ContextualAugmenter.Config(sequence_length=4)


@pytest.mark.slow
def test_stop_words_are_never_replaced(masked_lm):
    # the reference's list: NLTK's English stop words without its 8 question
    # words, plus 's and 're
    assert len(REFERENCE_STOP_WORDS) == 173
    assert {"a", "the", "is", "was", "not", "don't", "'s"} <= REFERENCE_STOP_WORDS
    assert not {"what", "how", "film", "great"} & REFERENCE_STOP_WORDS
    assert stop_word_set("none") == frozenset()
    try:  # spaCy is an optional extra
        import spacy  # noqa: F401
    except ImportError:
        with pytest.raises(KdplugError, match="spacy"):
            stop_word_set("spacy")
    else:
        assert "the" in stop_word_set("spacy")
    aug = make(masked_lm, top_k=3, p_replace=1.0)
    aug.prepare(["The film was a great story"])
    # The, was, a: stop words (compared in lower case), no candidates
    assert aug.candidates["The film was a great story"] == [
        [], ["great", "good", "movie"], [], [], ["good", "movie", "fun"],
        ["great", "good", "movie"]]
    g = np.random.default_rng(0)
    for _ in range(50):
        the, film, was, a, great, story = aug.augment(
            ["The film was a great story"], g)[0].split(" ")
        assert (the, was, a) == ("The", "was", "a")
        assert film != "film" and great != "great" and story != "story"


class RecordingMLM:
    """Stands in for the MLM: records its inputs, prefers VOCAB's "fun"."""

    def __init__(self):
        self.inputs = []

    def __call__(self, inputs, training=False):
        self.inputs.append({k: np.asarray(v) for k, v in inputs.items()})
        logits = np.zeros((len(inputs["token_ids"]), 1, len(VOCAB)), "float32")
        logits[:, 0, VOCAB.index("fun")] = 1.0
        return logits


def test_the_mlm_reads_the_masked_text_and_the_original(masked_lm):
    tokenizer = masked_lm.preprocessor.tokenizer
    ids = {w: VOCAB.index(w) for w in VOCAB}
    model = RecordingMLM()
    aug = ContextualAugmenter(ContextualAugmenter.Config(sequence_length=16, top_k=1),
                              masked_lm=model, tokenizer=tokenizer, run_eagerly=True)
    aug.prepare(["the great film"])  # "the": a stop word, no MLM row
    (inputs,) = model.inputs
    cls, sep, mask, pad = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"], ids["[PAD]"]
    great, film, the = ids["great"], ids["film"], ids["the"]
    # [CLS] masked [SEP] original [SEP]; segments 0 through the first [SEP]
    np.testing.assert_array_equal(inputs["token_ids"][:, :9], [
        [cls, the, mask, film, sep, the, great, film, sep],
        [cls, the, great, mask, sep, the, great, film, sep]])
    assert (inputs["token_ids"][:, 9:] == pad).all()
    np.testing.assert_array_equal(inputs["segment_ids"][:, :9],
                                  [[0, 0, 0, 0, 0, 1, 1, 1, 1]] * 2)
    np.testing.assert_array_equal(inputs["padding_mask"].sum(-1), [9, 9])
    np.testing.assert_array_equal(inputs["mask_positions"], [[2], [3]])
    assert aug.candidates["the great film"] == [[], ["fun"], ["fun"]]
    # pair_with_original: false: [CLS] masked [SEP], one segment
    model = RecordingMLM()
    aug = ContextualAugmenter(
        ContextualAugmenter.Config(sequence_length=16, pair_with_original=False),
        masked_lm=model, tokenizer=tokenizer, run_eagerly=True)
    aug.prepare(["great film"])
    (inputs,) = model.inputs
    np.testing.assert_array_equal(inputs["token_ids"][:, :5], [
        [cls, mask, film, sep, pad], [cls, great, mask, sep, pad]])
    assert (inputs["segment_ids"] == 0).all()


def test_needs_a_model():
    with pytest.raises(KdplugError, match="preset"):
        ContextualAugmenter().augment(["a film"], np.random.default_rng(0))
    with pytest.raises(KdplugError, match="cannot load"):
        ContextualAugmenter(ContextualAugmenter.Config(preset="/nonexistent/mlm")
                            ).augment(["a film"], np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^augment\[0\].top_k: must be >= 1 \(got 0\)"):
        parse(ContextualAugmenter.Config, {"top_k": 0}, "augment[0]")
    with pytest.raises(ConfigError, match="augment\\[0\\].stop_words: must be one of"):
        parse(ContextualAugmenter.Config, {"stop_words": "nltk"}, "augment[0]")
