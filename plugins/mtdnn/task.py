import dataclasses
from typing import Any
from typing import Optional

from kdplug.data import read_splits


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
        if "path" in overrides:  # the task's own file, with a split column
            overrides.update(train=None, dev=None, test=None)
        if task_cfg.type == "regression" or overrides.keys() & {
                "path", "label_column", "num_classes"}:
            overrides["label_names"] = None  # the data section's classes are not its
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
        task.splits = read_splits(task.data, config.resolve_path,
                                  label_kind="float" if task.is_regression else "class",
                                  seed=config.seed)
        return task
