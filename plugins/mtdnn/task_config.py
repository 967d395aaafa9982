import dataclasses
import re
from typing import Annotated
from typing import Literal
from typing import Optional

from kdplug.config import PositiveInt
from kdplug.config import Range
from kdplug.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclasses.dataclass
class TaskConfig:
    """One task of a multi-task run (an item of `method.tasks`).

    Every field left out falls back to the experiment's `data:` section, so
    tasks that share a file only name what differs (e.g. the label column).

    Args:
        name: the task's name: its head (`logits/<name>`) and report rows.
            Letters, digits and `_`, starting with a letter.
        type: `classification` (cross-entropy, accuracy) or `regression`
            (one output, squared error, Pearson/Spearman).
        path: the data file; default `data.path`.
        text_column: default `data.text_column`.
        text_pair_column: default `data.text_pair_column`.
        label_column: integer class ids (classification) or numbers
            (regression); default `data.label_column`.
        num_classes: classification only; default `data.num_classes`.
        teacher: fine-tune an ensemble of teachers for this task and distil
            their averaged outputs; `false` trains the task on its gold
            labels only.
        max_train_examples: cap on the task's training examples; default
            `data.max_train_examples`.

    Examples:

    ```yaml
    method:
      name: mtdnn-ensemble
      tasks:
        - name: movie_sentiment          # data.path, data.label_column
        - name: movie_score
          type: regression
          label_column: score
        - name: tweet_sentiment
          path: ../data/tweets.tsv
          teacher: false
    ```
    """

    name: str
    type: Literal["classification", "regression"] = "classification"
    path: Optional[str] = None
    text_column: Optional[str] = None
    text_pair_column: Optional[str] = None
    label_column: Optional[str] = None
    num_classes: Optional[Annotated[int, Range(2)]] = None
    teacher: bool = True
    max_train_examples: Optional[PositiveInt] = None

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ConfigError(
                "must be letters, digits and '_' starting with a letter "
                "(it names the task's head)", field="name", value=self.name)
        if self.type == "regression" and self.num_classes is not None:
            raise ConfigError(
                f"task {self.name!r}: num_classes is for classification; a "
                "regression task has one output", field="num_classes",
                value=self.num_classes)
