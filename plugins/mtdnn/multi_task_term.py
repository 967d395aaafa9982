from keras import ops

from kdplug.errors import KdplugError
from kdplug.terms import Term

TASK_TYPES = ("classification", "regression")


def head_specs(tasks):
    """Checks and normalises head descriptions.

    Args:
        tasks: list of mappings with `name`, `type` (`classification` or
            `regression`) and `num_outputs` (classes; 1 for regression).

    Returns:
        a list of plain `{"name", "type", "num_outputs"}` dicts (JSON-able,
        so they go into `get_config()` as they are).

    Examples:

    >>> head_specs([{"name": "sst", "type": "classification", "num_outputs": 2}])
    [{'name': 'sst', 'type': 'classification', 'num_outputs': 2}]
    """
    specs = []
    for task in tasks:
        spec = {
            "name": str(task["name"]),
            "type": str(task["type"]),
            "num_outputs": int(task["num_outputs"]),
        }
        if spec["type"] not in TASK_TYPES:
            raise KdplugError(
                f"task {spec['name']!r}: type must be one of {TASK_TYPES}, "
                f"got {spec['type']!r}"
            )
        if spec["type"] == "regression" and spec["num_outputs"] != 1:
            raise KdplugError(
                f"task {spec['name']!r}: a regression head has 1 output, got "
                f"{spec['num_outputs']}"
            )
        if spec["type"] == "classification" and spec["num_outputs"] < 2:
            raise KdplugError(
                f"task {spec['name']!r}: a classification head needs >= 2 "
                f"outputs, got {spec['num_outputs']}"
            )
        specs.append(spec)
    names = [s["name"] for s in specs]
    if not specs or len(set(names)) != len(names):
        raise KdplugError(f"task names must be unique and non-empty, got {names}")
    return specs


class MultiTaskTerm(Term):
    """Base of the multi-task loss terms: one head per task, one task per
    example.

    The batch carries an integer `task` feature indexing `tasks` (the
    student's head order). A subclass computes a per-example loss for each
    task's head over the whole batch; `per_task()` keeps, for every example,
    the loss of its own task. Values for the other tasks' heads are made
    finite before they are discarded (`ops.where`), so they add neither
    NaNs nor gradient.

    Args:
        tasks: list of `{"name", "type", "num_outputs"}` (see `head_specs`).
        weight: float. Weight in the total loss.
        name: str. The name shown in logs.

    Examples:

    ```python
    class PerTaskL1(MultiTaskTerm):
        def call(self, teacher, student, batch):
            return self.per_task(batch, lambda i, spec, mine: ops.sum(
                ops.abs(student[self.tap_of(spec)]), axis=-1))
    ```
    """

    def __init__(self, tasks, weight=1.0, name=None, **kwargs):
        super().__init__(weight=weight, name=name, **kwargs)
        self.tasks = head_specs(tasks)

    @staticmethod
    def tap_of(spec):
        return f"logits/{spec['name']}"

    def required_student_taps(self):
        return {self.tap_of(spec) for spec in self.tasks}

    def per_task(self, batch, loss_fn):
        """`sum_i [task == i] * loss_fn(i, spec_i, task == i)`, shape `(batch,)`.

        `loss_fn(i, spec, mine)` gets the boolean mask `mine` of the examples
        of task `i` and returns a `(batch,)` float32 loss.
        """
        task = ops.cast(batch["task"], "int32")
        total = ops.zeros(ops.shape(task), "float32")
        for index, spec in enumerate(self.tasks):
            mine = ops.equal(task, index)
            loss = ops.cast(loss_fn(index, spec, mine), "float32")
            total = total + ops.where(mine, loss, ops.zeros_like(loss))
        return total

    def get_config(self):
        config = super().get_config()
        config.update({"tasks": [dict(spec) for spec in self.tasks]})
        return config
