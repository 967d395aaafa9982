"""Shared pieces of the `cmlm-seq2seq` tests: the toy word-piece tokenizer,
a toy (source, target) TSV, a tiny C-MLM teacher.

Imported by name (`from cmlm_helpers import tokenizer`), not a conftest.py,
so that `from conftest import ...` elsewhere keeps finding tests/conftest.py.
"""

import keras_hub
import numpy as np
import pytest

from kdplug import testing

WORDS = testing.POSITIVE + testing.NEGATIVE + testing.NEUTRAL


def write_pairs(path, num_examples=120, seed=0):
    """A toy seq2seq TSV (id, split, source, target): the target is the
    source's words reversed; split 70/15/15."""
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as f:
        f.write("id\tsplit\tsource\ttarget\n")
        for i in range(num_examples):
            words = list(rng.choice(WORDS, rng.integers(2, 6)))
            split = ("train" if i < 0.7 * num_examples
                     else "dev" if i < 0.85 * num_examples else "test")
            f.write(f"{i}\t{split}\t{' '.join(words)}\t{' '.join(words[::-1])}\n")
    return str(path)


@pytest.fixture(scope="session")
def tokenizer():
    return keras_hub.tokenizers.BertTokenizer(
        vocabulary=testing.toy_vocabulary(), special_tokens_in_strings=True)


@pytest.fixture(scope="session")
def mlm():
    """A tiny random C-MLM teacher on the toy vocabulary (no dropout)."""
    backbone = testing.tiny_backbone(vocabulary_size=len(testing.toy_vocabulary()),
                                     seed=3)
    return keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
