"""Toy data for the task kinds beyond classification (`data.task`)."""

import json

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
