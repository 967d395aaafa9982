"""Building probing sets from any list of English sentences.

`build_probing_task("bigram_shift", sentences)` returns a `ProbingTask` with
train / dev / test splits; `build_probing_tasks` builds several, parsing the
sentences once for the syntactic tasks. The nine tasks follow Conneau et al.
(2018), "What you can cram into a single vector": three surface tasks that
need nothing but the text, and six syntactic/semantic ones whose labels come
from a dependency parser (spaCy), so they are silver.
"""

import collections
import math

import numpy as np

from kdplug.analysis.probing.builder import balance
from kdplug.analysis.probing.builder import deduplicate
from kdplug.analysis.probing.probing_task import ProbingTask
from kdplug.analysis.probing.spacy_parser import INSTALL_HINT
from kdplug.analysis.probing.surface import BigramShift
from kdplug.analysis.probing.surface import SentenceLength
from kdplug.analysis.probing.surface import WordContent
from kdplug.analysis.probing.syntactic import CoordinationInversion
from kdplug.analysis.probing.syntactic import ObjectNumber
from kdplug.analysis.probing.syntactic import SubjectNumber
from kdplug.analysis.probing.syntactic import Tense
from kdplug.analysis.probing.syntactic import TopConstituents
from kdplug.analysis.probing.syntactic import TreeDepth
from kdplug.data.examples import stratified_shares
from kdplug.errors import ConfigError
from kdplug.errors import DataError
from kdplug.errors import KdplugError
from kdplug.errors import did_you_mean

SURFACE_TASKS = ("sentence_length", "word_content", "bigram_shift")
SYNTACTIC_TASKS = ("tree_depth", "top_constituents", "tense", "subject_number",
                   "object_number", "coordination_inversion")

# Task name -> builder with its default settings.
BUILDERS = {
    b.name: b for b in (
        SentenceLength(), WordContent(), BigramShift(),
        TreeDepth(), TopConstituents(), Tense(), SubjectNumber(),
        ObjectNumber(), CoordinationInversion())
}

# Fewer examples (after balancing and capping) make no useful probing set.
MIN_EXAMPLES = 20


def get_builder(name):
    """The builder of a task name (a builder object passes through).

    Raises `ConfigError` naming an unknown task, with the nearest name and
    the valid ones.

    Examples:

    >>> get_builder("bigram_shift").needs_parser
    False
    """
    if not isinstance(name, str):
        if hasattr(name, "examples") and hasattr(name, "name"):
            return name
        raise ConfigError(f"a probing task is a name or a builder, got {name!r}")
    if name not in BUILDERS:
        raise ConfigError(
            f"unknown probing task {name!r}{did_you_mean(name, BUILDERS)}; "
            "valid tasks: " + ", ".join(BUILDERS))
    return BUILDERS[name]


def clean_sentences(sentences):
    """Collapses runs of whitespace to one space and strips each sentence,
    then drops empty sentences and repeats (a repeat could land in train and
    test at once).

    Returns `(sentences, kept)`: the clean sentences and their indices in
    the input.

    Examples:

    >>> clean_sentences(["  A  b ", "", "A b", "c"])
    (['A b', 'c'], [0, 3])
    """
    clean, kept, seen = [], [], set()
    for i, sentence in enumerate(sentences):
        sentence = " ".join(str(sentence).split())
        if sentence and sentence not in seen:
            seen.add(sentence)
            clean.append(sentence)
            kept.append(i)
    return clean, kept


def _check_split(split):
    split = tuple(float(p) for p in split)
    if (len(split) != 3 or any(p < 0 for p in split) or split[0] <= 0
            or split[2] <= 0 or not math.isclose(sum(split), 1.0, abs_tol=1e-6)):
        raise ValueError(
            "split must be three fractions (train, dev, test) summing to 1, "
            f"train and test > 0, got {split}")
    return split


def _needs_parser_error(name):
    return KdplugError(
        f"probing task {name!r} needs a dependency parser (its labels are "
        f"parsed): {INSTALL_HINT}, then pass "
        "parser=kdplug.analysis.probing.load_spacy_parser()")


def _stratified_cap(labels, max_examples, rng):
    """Indices of at most `max_examples` examples, each class keeping its
    share (largest remainders first, ties in label order)."""
    by_label = collections.defaultdict(list)
    for i, label in enumerate(labels):
        by_label[label].append(i)
    names = sorted(by_label)
    shares = stratified_shares([len(by_label[k]) for k in names], max_examples)
    counts = dict(zip(names, shares.tolist()))
    keep = []
    for k in names:
        keep.extend(rng.choice(by_label[k], size=counts[k], replace=False).tolist())
    return sorted(keep)


def _split(texts, labels, split, rng):
    """A seeded shuffle, then each class split train / dev / test in
    proportion (dev and test rounded half up, train the rest); each split is
    shuffled again so classes interleave."""
    order = rng.permutation(len(texts))
    by_label = collections.defaultdict(list)
    for i in order:
        by_label[labels[i]].append(int(i))
    parts = {"train": [], "dev": [], "test": []}
    for label in sorted(by_label):
        indices = by_label[label]
        n = len(indices)
        n_dev = int(math.floor(n * split[1] + 0.5))
        n_test = int(math.floor(n * split[2] + 0.5))
        n_train = n - n_dev - n_test
        parts["train"].extend(indices[:n_train])
        parts["dev"].extend(indices[n_train:n_train + n_dev])
        parts["test"].extend(indices[n_train + n_dev:])
    out_texts, out_labels = {}, {}
    for name, indices in parts.items():
        indices = [indices[j] for j in rng.permutation(len(indices))]
        out_texts[name] = [texts[i] for i in indices]
        out_labels[name] = [labels[i] for i in indices]
    return out_texts, out_labels


def build_probing_task(name, sentences, seed=0, parser=None, max_examples=None,
                       split=(0.8, 0.1, 0.1), source="", parsed=None):
    """Builds one probing set from a list of sentences.

    Steps, all drawn from `numpy.random.default_rng(seed)`: clean the
    sentences (`clean_sentences`: whitespace collapsed, empty ones and
    repeats dropped); parse them if the task needs it; let the task's
    builder label them (`builder.examples`); drop repeated texts (a text
    with two labels goes altogether); balance the classes by downsampling
    (`balance`; a class under the builder's `min_class_size` is dropped);
    cap at `max_examples` keeping each class's share; shuffle and split
    each class train / dev / test by `split`.

    Args:
        name: str. One of `BUILDERS` (`SURFACE_TASKS`, `SYNTACTIC_TASKS`), or
            a builder object (e.g. `SentenceLength(bins=...)`).
        sentences: list of str. English sentences (or short texts).
        seed: int. Seeds every draw: the same seed gives the same sets.
        parser: an object with `parse(list of str) -> list of
            ParsedSentence` (`load_spacy_parser()`), for the syntactic tasks.
        max_examples: int. At most this many examples in all.
        split: (train, dev, test) fractions summing to 1; dev may be 0.
        source: str. The corpus, for the set's `source`
            (`"built from N sentences of <source>"`).
        parsed: list of `ParsedSentence` aligned with `sentences`, instead
            of `parser` (already parsed; `build_probing_tasks` parses once).

    Returns a `ProbingTask` (`silver` when the task needs a parser).

    Raises `ConfigError` for an unknown task name, `KdplugError` when the
    task needs a parser and none is given, and `DataError` when fewer than
    20 examples in 2 classes remain.

    Examples:

    ```python
    task = build_probing_task("sentence_length", sentences, seed=0,
                              source="data/movie_snippets.tsv")
    task.label_distribution()["train"]  # {'1-8': 64, '13-16': 64, ...}
    ```
    """
    builder = get_builder(name)
    split = _check_split(split)
    if max_examples is not None and max_examples < 1:
        raise ValueError(f"max_examples must be >= 1, got {max_examples}")
    sentences = list(sentences)
    n_given = len(sentences)
    if parsed is not None and len(parsed) != n_given:
        raise ValueError(f"{len(parsed)} parses for {n_given} sentences")
    sentences, kept = clean_sentences(sentences)
    if builder.needs_parser:
        if parsed is None:
            if parser is None:
                raise _needs_parser_error(builder.name)
            parsed = parser.parse(sentences)
        else:
            parsed = [parsed[i] for i in kept]
    else:
        parsed = None
    rng = np.random.default_rng(seed)
    texts, labels = builder.examples(sentences, rng, parsed)
    texts, labels = deduplicate(texts, labels)
    qualified = len(texts)
    if builder.balanced:
        texts, labels = balance(texts, labels, rng, None, builder.min_class_size)
    if max_examples is not None and len(texts) > max_examples:
        keep = _stratified_cap(labels, max_examples, rng)
        texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    n_classes = len(set(labels))
    if len(texts) < MIN_EXAMPLES or n_classes < 2:
        raise DataError(
            f"probing task {builder.name!r}: only {qualified} of "
            f"{len(sentences)} sentences qualified, leaving {len(texts)} "
            f"examples in {n_classes} class{'' if n_classes == 1 else 'es'} "
            f"after balancing; need at least {MIN_EXAMPLES} examples in 2 "
            "classes (give more sentences)")
    split_texts, split_labels = _split(texts, labels, split, rng)
    corpus = f" of {source}" if source else ""
    description = " ".join(p for p in (builder.description, builder.details()) if p)
    if builder.needs_parser and parser is not None and getattr(parser, "name", None):
        description += f" Parsed by {parser.name}."
    return ProbingTask(
        name=builder.name,
        texts=split_texts,
        labels=split_labels,
        description=description,
        source=f"built from {len(sentences)} sentences{corpus}",
        silver=builder.needs_parser,
    )


def build_probing_tasks(names, sentences, seed=0, parser=None, max_examples=None,
                        split=(0.8, 0.1, 0.1), source="", skipped=None):
    """Builds several probing sets from the same sentences.

    All names are checked before any work; the sentences are parsed once
    for all the syntactic tasks. Each task draws from its own
    `numpy.random.default_rng(seed)`, so a set does not depend on which
    other tasks are built with it.

    Args:
        names: list of task names (or builders); None for all nine
            (`SURFACE_TASKS + SYNTACTIC_TASKS`).
        sentences: list of str.
        seed, parser, max_examples, split, source: as for
            `build_probing_task`.
        skipped: a list: a task with too few examples is left out and
            `(name, reason)` appended to it instead of raising (what
            `kdplug analyze` does on small data: the other tasks and the
            behaviour part still run). None: raise.

    Returns `{name: ProbingTask}` in the order of `names` (without the
    skipped ones).

    Raises `ConfigError` naming an unknown task (with the nearest name and
    the valid ones), `KdplugError` when a task needs a parser and `parser`
    is None (`pip install "kdplug[spacy]"`), `DataError` when a task has too
    few examples (unless `skipped` is given).

    Examples:

    ```python
    from kdplug.analysis.probing import SURFACE_TASKS, SYNTACTIC_TASKS
    tasks = build_probing_tasks(SURFACE_TASKS + SYNTACTIC_TASKS, sentences,
                                parser=load_spacy_parser())
    {name: task.majority_baseline() for name, task in tasks.items()}
    ```
    """
    if names is None:
        names = SURFACE_TASKS + SYNTACTIC_TASKS
    if isinstance(names, str):
        names = [names]
    builders = [get_builder(name) for name in names]
    missing = [b.name for b in builders if b.needs_parser and parser is None]
    if missing:
        raise _needs_parser_error(missing[0]) if len(missing) == 1 else KdplugError(
            f"probing tasks {', '.join(map(repr, missing))} need a dependency "
            f"parser (their labels are parsed): {INSTALL_HINT}, then pass "
            "parser=kdplug.analysis.probing.load_spacy_parser()")
    sentences, _ = clean_sentences(sentences)
    parsed = None
    if any(b.needs_parser for b in builders):
        parsed = parser.parse(sentences)
    tasks = {}
    for builder in builders:
        try:
            tasks[builder.name] = build_probing_task(
                builder, sentences, seed=seed, parser=parser,
                max_examples=max_examples, split=split, source=source,
                parsed=parsed if builder.needs_parser else None)
        except DataError as e:
            if skipped is None:
                raise
            skipped.append((builder.name, str(e)))
    return tasks
