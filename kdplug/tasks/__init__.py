"""Task kinds: what a label is and how a run learns it (`data.task`).

Examples:

```python
from kdplug.tasks import get_task

task = get_task(config.task)
terms = [task.soft_term(2.0, weight=0.5), task.hard_term(weight=0.5)]
```
"""

from kdplug.errors import did_you_mean
from kdplug.tasks.classification import ClassificationTask
from kdplug.tasks.extractive_qa import ExtractiveQATask
from kdplug.tasks.multi_label import MultiLabelTask
from kdplug.tasks.regression import RegressionTask
from kdplug.tasks.task import Task
from kdplug.tasks.token_classification import TokenClassificationTask

TASKS = {cls.name: cls for cls in (ClassificationTask, RegressionTask, MultiLabelTask,
                                   TokenClassificationTask, ExtractiveQATask)}


def get_task(name, data=None):
    """The `Task` of a task kind name (`data.task`); `data`: the run's
    `DataConfig`, for kinds with options of their own."""
    if name not in TASKS:
        raise KeyError(f"unknown task kind {name!r}{did_you_mean(name, list(TASKS))}; "
                       f"known: {', '.join(TASKS)}")
    return TASKS[name](data)


def task_objective(config):
    """The teacher's fine-tuning objective of `config`'s task kind
    (`data.task`, e.g. regression's `RegressionObjective`): what a run
    fine-tunes its teacher with, so every command that looks the teacher up
    (`kdplug predict/evaluate/analyze --model teacher`) computes the key the
    run cached it under; classification's for a kind kdplug does not know
    (a method's own, which passes its own objective)."""
    return get_task(config.task if config.task in TASKS else "classification").objective()


__all__ = ["ClassificationTask", "ExtractiveQATask", "MultiLabelTask", "RegressionTask", "TASKS", "Task",
           "TokenClassificationTask", "get_task", "task_objective"]
