"""The method and student contracts that plugins implement."""

import dataclasses
from typing import Any
from typing import Callable
from typing import ClassVar
from typing import Optional

from kdplug.configurable import Configurable


@dataclasses.dataclass
class Stage:
    """One training stage of a method.

    Args:
        name: shown in logs and used to name checkpoints and history.
        terms: the `kdplug.terms.Term`s summed in this stage.
        epochs: epochs for this stage; None uses `training.epochs`.
        trainable: optional `fn(student)` that sets `trainable` flags on the
            student's layers for this stage (e.g. progressive transfer); the
            student is made fully trainable again before the next stage.
        data: `"task"` (the labelled training split, plus any augmented
            examples) or `"unlabelled"` (texts only, labels ignored).
        learning_rate: overrides `training.learning_rate` for this stage.
    """

    name: str
    terms: list
    epochs: Optional[int] = None
    trainable: Optional[Callable[[Any], None]] = None
    data: str = "task"
    learning_rate: Optional[float] = None


class Method(Configurable):
    """A distillation method: which student, which loss terms, which stages.

    Subclasses set `name` (what configs write as `method.name`), a dataclass
    `Config` holding their typed options (validated from the YAML `method:`
    section, defaults included), and implement `stages()`. Override
    `build_student()` only when the method needs a special student; by
    default the configured `student.kind` builds it.

    Args:
        config: an instance of `Config`.

    Examples:

    ```python
    class LogitMatching(kdplug.Method):
        name = "logit-matching"

        @dataclasses.dataclass
        class Config:
            weight: float = 1.0

        def stages(self, teacher, student):
            return [kdplug.Stage("distill", [LogitMSE(self.config.weight)])]
    ```
    """

    default_student: ClassVar[dict] = {"kind": "truncated"}

    def build_student(self, teacher, student_kind, num_classes):
        """Builds the student; `student_kind` is a configured `StudentKind`."""
        return student_kind.build(teacher, num_classes)

    def stages(self, teacher, student):
        raise NotImplementedError(f"{type(self).__name__}.stages()")

    def evaluate(self, student, test_ds, run_dir):
        """Method-specific evaluation added to the run's report.

        Called by `kdplug run` after training with the student and the test
        split; return a JSON-able dict (saved under `report["method"]`) or
        None. Files written into `run_dir` belong to the report.
        """
        return None

    @classmethod
    def check_config(cls, config):
        """Checks across config sections, after every section validated.

        Called by `kdplug.config` with the whole `ExperimentConfig`; raise a
        `kdplug.ConfigError` naming the file and field (e.g. a method that
        needs `teacher.finetune`). The default checks nothing.
        """

    # `run_experiment(self, experiment)`: optional. A method whose flow is not
    # "one student, its stages" (e.g. `mtdnn-ensemble`: several tasks, teacher
    # ensembles, baseline students) defines it and drives the whole run with
    # the `kdplug.train.Experiment` helpers (`run_stage`, `evaluate`, ...);
    # `kdplug run` calls it instead of its own flow. Not defined here, so that
    # `Experiment` can tell which methods have one.


class StudentKind(Configurable):
    """A student architecture that plugins register (`student.kind`).

    Args:
        config: an instance of the subclass's dataclass `Config`.

    Examples:

    ```python
    class Truncated(kdplug.StudentKind):
        name = "truncated"

        @dataclasses.dataclass
        class Config:
            layers: list = dataclasses.field(default_factory=lambda: [0, 1])

        def build(self, teacher, num_classes):
            ...
    ```
    """

    def build(self, teacher, num_classes):
        raise NotImplementedError(f"{type(self).__name__}.build()")
