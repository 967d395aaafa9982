"""Toy data for the task kinds beyond classification (`data.task`)."""

import json

import numpy as np

from kdplug.testing import NEGATIVE
from kdplug.testing import POSITIVE
from kdplug.testing import toy_sentences


def write_toy_multi_label_jsonl(path, num_examples=240, seed=0):
    """A multi-label JSONL file (`id`, `split`, `text`, `labels`) of the
    toy sentences: `labels` lists `pos` when a sentence holds a positive
    word and `neg` when it holds a negative one (both, one, or neither),
    split 70/15/15 like `write_toy_tsv`.

    Examples:

    ```python
    path = write_toy_multi_label_jsonl(tmp_path / "toy.jsonl")
    config = write_toy_config(tmp_path, {"name": "kd"},
                              data={"path": path, "task": "multi_label",
                                    "label_column": "labels"})
    ```
    """
    texts, _ = toy_sentences(num_examples, seed)
    n_train, n_dev = int(0.7 * num_examples), int(0.15 * num_examples)
    with open(path, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            words = set(text.split())
            labels = [name for name, vocabulary in (("neg", NEGATIVE), ("pos", POSITIVE))
                      if words & set(vocabulary)]
            split = "train" if i < n_train else "dev" if i < n_train + n_dev else "test"
            f.write(json.dumps({"id": i, "split": split, "text": text,
                                "labels": labels}) + "\n")
    return str(path)


def write_toy_tokens_jsonl(path, num_examples=240, seed=0):
    """A token-classification JSONL file (`id`, `split`, `words`, `tags`) of
    the toy sentences: a positive word is tagged `B-POS`, a negative one
    `B-NEG`, two in a row continue with `I-`, every other word `O`; split
    70/15/15 like `write_toy_tsv`.

    Examples:

    ```python
    path = write_toy_tokens_jsonl(tmp_path / "tokens.jsonl")
    config = write_toy_config(tmp_path, {"name": "kd"},
                              data={"path": path, "task": "token_classification",
                                    "text_column": "words", "label_column": "tags",
                                    "num_classes": 5})
    ```
    """
    texts, _ = toy_sentences(num_examples, seed)
    n_train, n_dev = int(0.7 * num_examples), int(0.15 * num_examples)
    kinds = {**{w: "POS" for w in POSITIVE}, **{w: "NEG" for w in NEGATIVE}}
    with open(path, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            words = text.split()
            tags, previous = [], None
            for word in words:
                kind = kinds.get(word)
                tags.append("O" if kind is None else
                            f"{'I' if kind == previous else 'B'}-{kind}")
                previous = kind
            split = "train" if i < n_train else "dev" if i < n_train + n_dev else "test"
            f.write(json.dumps({"id": i, "split": split, "words": words,
                                "tags": tags}) + "\n")
    return str(path)


def toy_questions(num_examples=240, seed=0):
    """Toy extractive QA rows in Hugging Face `squad`'s flat form (`id`,
    `question`, `context`, `answers` with `text` and `answer_start`): the
    question is `good`, the context one or two toy sentences holding exactly
    one positive word, the answer that word. A per-token head learns it from
    the word alone; about a third of the contexts pass a 16-token window.

    Examples:

    >>> row = toy_questions(1)[0]
    >>> row["context"][row["answers"]["answer_start"][0]:].split()[0] in POSITIVE
    True
    """
    rng = np.random.default_rng(seed)
    texts, _ = toy_sentences(4 * num_examples, seed)
    neutral = [" ".join(w for w in t.split() if w not in POSITIVE) for t in texts]
    rows = []
    for i in range(num_examples):
        words = neutral[2 * i].split()
        if rng.random() < 0.35:
            words += neutral[2 * i + 1].split()
        answer = str(rng.choice(POSITIVE))
        words.insert(int(rng.integers(0, len(words) + 1)), answer)
        index = words.index(answer)
        start = len(" ".join(words[:index])) + (1 if index else 0)
        rows.append({"id": f"q{i}", "question": "good",
                     "context": " ".join(words),
                     "answers": {"text": [answer], "answer_start": [start]}})
    return rows


def write_toy_questions_jsonl(path, num_examples=240, seed=0):
    """`toy_questions` as a JSONL file with a `split` column (70/15/15 like
    `write_toy_tsv`).

    Examples:

    ```python
    path = write_toy_questions_jsonl(tmp_path / "qa.jsonl")
    config = write_toy_config(tmp_path, {"name": "kd"},
                              data={"path": path, "task": "extractive_qa",
                                    "text_column": "question",
                                    "text_pair_column": "context",
                                    "label_column": "answers"})
    ```
    """
    n_train, n_dev = int(0.7 * num_examples), int(0.15 * num_examples)
    with open(path, "w", encoding="utf-8") as f:
        for i, row in enumerate(toy_questions(num_examples, seed)):
            split = "train" if i < n_train else "dev" if i < n_train + n_dev else "test"
            f.write(json.dumps({**row, "split": split}) + "\n")
    return str(path)
