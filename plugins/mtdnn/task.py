import dataclasses
import math
import os
import warnings
from typing import Any
from typing import Optional

import numpy as np

from kdplug.data import Examples
from kdplug.data import read_rows
from kdplug.data import read_splits
from kdplug.data.readers import TFDS_PREFIX
from kdplug.errors import DataError


@dataclasses.dataclass
class Task:
    """One task of a multi-task run, resolved against the `data:` section
    and read.

    Args:
        name: the task's name (its head is `logits/<name>`).
        type: `classification` or `regression`.
        num_outputs: the head's width (classes, or 1 for regression).
        teacher: whether the task gets a teacher ensemble.
        data: the task's `kdplug.config.DataConfig` (what the teacher
            fine-tuning cache key hashes).
        splits: `{"train", "validation", "test"}` `Examples` (validation may
            be None); regression labels are float32 targets.

    Examples:

    ```python
    task = Task.read(config.method_config.tasks[0], config)
    len(task.splits["train"]), task.spec()
    ```
    """

    name: str
    type: str
    num_outputs: int
    teacher: bool
    data: Any
    splits: Optional[dict] = None

    @property
    def is_regression(self):
        return self.type == "regression"

    @property
    def train(self):
        return self.splits["train"]

    def spec(self):
        """The head description models and terms take."""
        return {"name": self.name, "type": self.type, "num_outputs": self.num_outputs}

    @classmethod
    def resolve(cls, task_cfg, data_cfg):
        """A `Task` (not read yet) from a `TaskConfig` and the `data:` section."""
        overrides = {
            key: getattr(task_cfg, key)
            for key in ("path", "text_column", "text_pair_column", "label_column",
                        "num_classes", "max_train_examples")
            if getattr(task_cfg, key) is not None
        }
        data = dataclasses.replace(data_cfg, **overrides)
        regression = task_cfg.type == "regression"
        return cls(
            name=task_cfg.name,
            type=task_cfg.type,
            num_outputs=1 if regression else data.num_classes,
            teacher=task_cfg.teacher,
            data=data,
        )

    @classmethod
    def read(cls, task_cfg, config):
        """Resolves `task_cfg` against `config.data` and reads its splits."""
        task = cls.resolve(task_cfg, config.data)
        task.splits = (
            read_regression_splits(task.data, config.resolve_path)
            if task.is_regression
            else read_splits(task.data, config.resolve_path)
        )
        return task


def read_regression_splits(cfg, resolve_path=os.path.abspath):
    """Like `kdplug.data.read_splits`, with real-valued labels.

    `cfg.label_column` holds numbers (e.g. a -4..4 rating); rows whose value
    is not a finite number raise a `DataError` naming file and line, or are
    skipped with `bad_rows: skip`. Labels are float32.
    """
    if cfg.path.startswith(TFDS_PREFIX):
        raise DataError(f"{cfg.path}: regression tasks read TSV/CSV/JSONL files")
    path = resolve_path(cfg.path)
    if cfg.split_column is None:
        raise DataError(f"{path}: data.split_column is null; put the split in a column")
    rows = read_rows(path, cfg.format)
    wanted = {"train": cfg.train_split, "validation": cfg.validation_split,
              "test": cfg.test_split}
    splits = {}
    for name, split in wanted.items():
        if split is None:
            splits[name] = None
            continue
        texts, pairs, values, skipped = [], [], [], 0
        for line_no, row in rows:
            if cfg.split_column not in row:
                raise DataError(
                    f"{path}:{line_no}: no column {cfg.split_column!r} "
                    f"(data.split_column); columns are {sorted(row)}"
                )
            if row[cfg.split_column] != split:
                continue
            try:
                text = _text(row, cfg.text_column, path, line_no)
                pair = (_text(row, cfg.text_pair_column, path, line_no)
                        if cfg.text_pair_column else None)
                value = _number(row, cfg.label_column, path, line_no)
            except DataError:
                if cfg.bad_rows == "skip":
                    skipped += 1
                    continue
                raise
            texts.append(text)
            pairs.append(pair)
            values.append(value)
        if skipped:
            warnings.warn(f"{path}: skipped {skipped} bad row(s) (data.bad_rows: skip)")
        if not texts:
            raise DataError(
                f"{path}: no rows with {cfg.split_column}={split!r} "
                f"(data.{name}_split)"
            )
        splits[name] = Examples(
            texts, np.asarray(values, dtype="float32"),
            pairs if cfg.text_pair_column else None, source=path,
        )
    if cfg.max_train_examples:
        splits["train"] = splits["train"].take(cfg.max_train_examples)
    return splits


def _text(row, column, path, line_no):
    if column not in row:
        raise DataError(f"{path}:{line_no}: no column {column!r}; columns are {sorted(row)}")
    value = row[column]
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{path}:{line_no}: empty text in column {column!r}")
    return value


def _number(row, column, path, line_no):
    if column not in row:
        raise DataError(
            f"{path}:{line_no}: no column {column!r} (the task's label_column); "
            f"columns are {sorted(row)}"
        )
    raw = row[column]
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataError(
            f"{path}:{line_no}: regression target {raw!r} in column {column!r} "
            "is not a finite number"
        )
    return value
