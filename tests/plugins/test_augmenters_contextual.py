"""TinyBERT's contextual augmenter, on a tiny masked LM built here."""

import keras
import keras_hub
import numpy as np
import pytest

from kdplug.errors import KdplugError
from kdplug_plugins.augmenters.contextual import ContextualAugmenter

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


TEXTS = ["A great film.", "Films are fun, really", "Good plot"]


def test_candidates_are_the_mlm_top_k_single_piece_words(masked_lm):
    aug = make(masked_lm, top_k=3)
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
    aug = make(masked_lm, top_k=3, p_replace=1.0, batch_size=2)
    out = aug.augment(TEXTS, np.random.default_rng(0))
    assert out == ["Good good great.", "Films are movie, really", "Great movie"]
    half = make(masked_lm, top_k=2, p_replace=0.5)
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
    never = make(masked_lm, p_replace=0.0)
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
    aug = make(masked_lm, sequence_length=4)  # [CLS] a great [SEP]
    aug.prepare(["a great film"])
    assert [bool(c) for c in aug.candidates["a great film"]] == [True, True, False]


def test_needs_a_model():
    with pytest.raises(KdplugError, match="preset"):
        ContextualAugmenter().augment(["a film"], np.random.default_rng(0))
    with pytest.raises(KdplugError, match="cannot load"):
        ContextualAugmenter(ContextualAugmenter.Config(preset="/nonexistent/mlm")
                            ).augment(["a film"], np.random.default_rng(0))
    with pytest.raises(ValueError, match="top_k"):
        ContextualAugmenter.Config(top_k=0)
