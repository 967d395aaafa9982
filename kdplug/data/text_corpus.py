import dataclasses
import os
from typing import Optional

import numpy as np

from kdplug.data.examples import Examples
from kdplug.data.text_files import read_texts
from kdplug.data.transfer_set import UNLABELLED
from kdplug.errors import DataError


@dataclasses.dataclass(frozen=True)
class TextCorpus:
    """Texts a stage trains on instead of the task's data, labels ignored.

    A method's stage reads one when its `data` is a `TextCorpus` (e.g.
    TinyBERT's general distillation on a general-domain corpus rather than
    the task's texts): the runner reads the file, encodes it as the task's
    texts are encoded and gives the stage its own teacher outputs. The file
    is named by a method option listed in the method's `path_fields`, so
    the config resolves it against the config file, refuses a missing one
    naming the field, and fingerprints its content into the run's settings
    (a changed corpus is a changed run).

    Args:
        path: a text file (one text per line, UTF-8; an empty line is an
            error naming `file:line`) or a TSV / CSV / JSONL / Parquet file
            whose `data.text_column` holds the texts.
        field: the config field that names the file (e.g.
            `method.general_corpus`), for messages.
        max_examples: read the first `max_examples` texts only (None: all).

    Examples:

    ```python
    corpus = TextCorpus("data/general_english.txt", "method.general_corpus")
    examples = corpus.read(config.data, config.resolve_path)
    stage = kdplug.Stage("general", terms, data=corpus, teacher="pretrained")
    ```
    """

    path: str
    field: str
    max_examples: Optional[int] = None

    def __post_init__(self):
        if self.max_examples is not None and self.max_examples < 1:
            raise ValueError(f"max_examples must be >= 1, got {self.max_examples}")

    @classmethod
    def stage_data(cls, path, field):
        """A stage's `data` for an optional corpus option: `TextCorpus(path,
        field)`, or `"unlabelled"` (the task's training texts, labels
        ignored) when `path` is None."""
        return "unlabelled" if path is None else cls(path, field)

    def read(self, data, resolve_path=os.path.abspath):
        """The corpus as `Examples` without labels (all `UNLABELLED`, -1).

        Args:
            data: the run's `DataConfig` (its `text_column` and quoting
                read a table).
            resolve_path: maps `path` to a file (e.g. relative to the
                config file, `ExperimentConfig.resolve_path`).

        Raises:
            DataError: a missing file, an empty text, no text at all (naming
                the file, its line and `field`), or a run on text pairs
                (`data.text_pair_column`): a corpus holds single texts.
        """
        path = resolve_path(self.path)
        if data.text_pair_column:
            raise DataError(
                f"{path} ({self.field}) holds single texts, and this run reads "
                f"text pairs (data.text_pair_column {data.text_pair_column!r}); "
                "a stage on a corpus of its own needs a single-text task")
        texts, _ = read_texts(path, data, field=self.field)
        if self.max_examples is not None:
            texts = texts[:self.max_examples]
        return Examples(texts, np.full(len(texts), UNLABELLED, dtype="int32"), source=path)
