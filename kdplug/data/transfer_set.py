"""Building a transfer set: the original examples plus augmented ones.

Examples:

```python
steps = kdplug.run.augmenters_from_config([{"name": "tang", "n": 20}])
train = build_transfer_set(splits["train"], steps, seed=0)
# train[:len(original)] is the original split, unchanged; the rest has
# label -1 (no gold label: only the teacher's outputs train on them).
```
"""

import dataclasses
import logging
import os
from typing import Any

import numpy as np

from kdplug import storage
from kdplug.data.augmentation import normalize
from kdplug.data.examples import Examples
from kdplug.data.examples import examples_fingerprint
from kdplug.errors import PluginError
from kdplug.storage import cache_root
from kdplug.storage import fingerprint

UNLABELLED = -1

# A transfer set's cache entry: `cache_root()/transfer/<key>/transfer.json`
# (`kdplug cache ls/rm` lists it as a `transfer-set`).
TRANSFER_FOLDER = "transfer"
TRANSFER_FILE = "transfer.json"

log = logging.getLogger(__name__)


@dataclasses.dataclass
class AugmentStep:
    """One `augment:` entry: an augmenter and how many samples per example.

    Args:
        augmenter: a configured `kdplug.data.augmentation.Augmenter`.
        n: samples drawn per original example (duplicates are dropped, so
            an example yields at most `n` new ones).

    Examples:

    ```python
    step = AugmentStep(TangAugmenter(pos_source=LexiconPOS(lexicon)), n=20)
    build_transfer_set(examples, [step], seed=0)
    ```
    """

    augmenter: Any
    n: int = 10


def augment_steps(entries, registry):
    """`AugmentStep`s for validated `AugmentEntry`s (`config.augment_entries`):
    each entry's registered augmenter built with its typed `Config`."""
    return [AugmentStep(registry.get(e.name)(e.config), e.n) for e in entries]


def build_transfer_set(examples, steps, seed=0, cache=False):
    """The original examples followed by augmented, unlabelled ones.

    Every step draws `n` samples per original example: sample round `r`
    passes all original texts through the step's augmenter with a generator
    seeded by `(seed, step index, r)`, so the result depends only on the
    examples, the steps and the seed. Steps run in config order and their
    outputs are appended in that order (round by round, example by example).
    A new text equal (up to spacing around punctuation) to an original or
    an earlier new text is dropped; originals are never dropped, reordered
    or changed. New examples get label -1. For sentence pairs both texts go
    through the augmenter (independently drawn) and a pair is a duplicate
    only when both texts are.

    Args:
        examples: the original `kdplug.data.Examples`.
        steps: a list of `AugmentStep` (e.g. from
            `kdplug.run.augmenters_from_config`).
        seed: int.
        cache: store the result under `cache_root()/transfer/<key>/` (or
            in the given folder, if a str) and reuse it when the examples,
            steps and seed are the same (worth it for `contextual`).

    Returns:
        `kdplug.data.Examples`.
    """
    if not steps:
        return examples
    cache_file = None
    if cache:
        folder = cache if isinstance(cache, str) else os.path.join(
            cache_root(), TRANSFER_FOLDER)
        key = _key(examples, steps, seed)
        cache_file = os.path.join(folder, key, TRANSFER_FILE)
        stored = _read(cache_file, examples)
        if stored is not None:
            log.info(f"augment: reused {len(stored) - len(examples)} augmented "
                f"examples from {cache_file}")
            return stored
    texts = list(examples.texts)
    pairs = None if examples.pairs is None else list(examples.pairs)
    seen = {_dedupe_key(t, None if pairs is None else pairs[i])
            for i, t in enumerate(texts)}
    new_texts, new_pairs = [], []
    for s, step in enumerate(steps):
        augmenter = step.augmenter
        augmenter.fit(texts + (pairs or []))
        added = dropped = 0
        for r in range(step.n):
            rng = np.random.default_rng([seed, s, r])
            if pairs is None:
                out, out_pairs = _checked(augmenter, texts, rng), None
            else:
                both = augmenter.augment_pairs(list(texts), list(pairs), rng)
                if not isinstance(both, (tuple, list)) or len(both) != 2:
                    raise PluginError(
                        f"augmenter {augmenter.name!r}: augment_pairs() must return "
                        f"(texts, pairs), got {type(both).__name__}")
                out, out_pairs = both
                _check(augmenter, texts, out)
                _check(augmenter, pairs, out_pairs)
            for i, text in enumerate(out):
                pair = None if out_pairs is None else out_pairs[i]
                key = _dedupe_key(text, pair)
                if key in seen:
                    dropped += 1
                    continue
                seen.add(key)
                new_texts.append(text)
                new_pairs.append(pair)
                added += 1
        log.info(f"augment: {augmenter.name} x{step.n}: +{added} examples "
            f"({dropped} duplicates dropped)")
    result = Examples(
        texts + new_texts,
        np.concatenate([np.asarray(examples.labels),
                        np.full(len(new_texts), UNLABELLED, dtype="int32")]),
        None if pairs is None else pairs + new_pairs,
        examples.source,
    )
    log.info(f"augment: transfer set of {len(result)} examples "
        f"({len(examples)} original, {len(new_texts)} augmented)")
    if cache_file is not None:
        storage.mark_entry(os.path.dirname(cache_file), "transfer-set", key)
        _write(cache_file, result, len(examples))
    return result


def _checked(augmenter, texts, rng):
    return _check(augmenter, texts, augmenter.augment(list(texts), rng))


def _check(augmenter, texts, out):
    if not isinstance(out, list) or len(out) != len(texts) or not all(
            isinstance(t, str) for t in out):
        raise PluginError(
            f"augmenter {augmenter.name!r} must return a list of {len(texts)} "
            f"str (one per input text), got {type(out).__name__}"
            f"{'' if not hasattr(out, '__len__') else f' of {len(out)}'}"
        )
    return out


def _dedupe_key(text, pair):
    return normalize(text) if pair is None else (normalize(text), normalize(pair))


def _key(examples, steps, seed):
    return fingerprint({
        "data": examples_fingerprint(examples),
        "steps": [[s.augmenter.fingerprint(), s.n] for s in steps],
        "seed": seed,
    })


def _read(path, examples):
    data = storage.read_json(path)
    if not isinstance(data, dict) or data.get("original") != len(examples):
        return None
    n = len(data["texts"])
    pairs = data.get("pairs")
    return Examples(
        list(examples.texts) + data["texts"],
        np.concatenate([np.asarray(examples.labels),
                        np.full(n, UNLABELLED, dtype="int32")]),
        None if examples.pairs is None else list(examples.pairs) + pairs,
        examples.source,
    )


def _write(path, result, original):
    data = {
        "original": original,
        "texts": result.texts[original:],
        "pairs": None if result.pairs is None else result.pairs[original:],
    }
    storage.write_json(path, data, indent=None)
