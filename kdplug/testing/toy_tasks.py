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
