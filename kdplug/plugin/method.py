"""The method contract: a method declares its student, stages and runner."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING
from typing import Any
from typing import Callable
from typing import ClassVar
from typing import Optional
from typing import Union

from kdplug.plugin.configurable import Configurable

if TYPE_CHECKING:
    import keras
    import tensorflow as tf

    from kdplug.config.experiment_config import ExperimentConfig
    from kdplug.config.sections import DataConfig
    from kdplug.data.text_corpus import TextCorpus
    from kdplug.plugin.student_kind import StudentKind
    from kdplug.run.runner import Runner
    from kdplug.tasks.task import Task
    from kdplug.terms.term import Term

# Which teacher a stage distils from (`Stage.teacher`).
STAGE_TEACHERS = ("finetuned", "pretrained")


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
            examples), `"unlabelled"` (the same texts, labels ignored) or a
            `kdplug.data.TextCorpus` (the texts of a file of its own, e.g. a
            general-domain corpus, without labels).
        learning_rate: overrides `training.learning_rate` for this stage.
        teacher: `"finetuned"` (the run's teacher, after
            `teacher.finetune`) or `"pretrained"` (the teacher as loaded
            from `teacher.source`, before fine-tuning: a general
            distillation stage). A pre-trained teacher's classifier head
            is untrained, so a stage reading its `logits` is refused.

    `SingleTaskRunner` gives a stage with a corpus or the pre-trained
    teacher (`own_inputs`) its own batches and teacher outputs; a runner of
    its own (`Method.runner`) that runs such stages must do the same.
    """

    name: str
    terms: list[Term]
    epochs: Optional[int] = None
    trainable: Optional[Callable[[keras.Model], None]] = None
    data: Union[str, TextCorpus] = "task"
    learning_rate: Optional[float] = None
    teacher: str = "finetuned"

    def __post_init__(self) -> None:
        if self.teacher not in STAGE_TEACHERS:
            raise ValueError(f"stage {self.name!r}: teacher must be one of "
                             f"{', '.join(STAGE_TEACHERS)}, got {self.teacher!r}")

    @property
    def own_inputs(self) -> bool:
        """Whether the stage trains on other inputs than the run's transfer
        set with the fine-tuned teacher (its own corpus, or the pre-trained
        teacher): the runner then gives it its own teacher outputs."""
        return self.teacher != "finetuned" or not isinstance(self.data, str)


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

    default_student: ClassVar[dict[str, Any]] = {"kind": "truncated"}
    # `Config` fields that name files (e.g. a corpus of its own): resolved
    # against the config file when it loads (a missing file is an error
    # naming `method.<field>`), their content part of the run's settings.
    path_fields: ClassVar[tuple[str, ...]] = ()
    # The task kinds a run of this method has: `evaluation.metrics` may name
    # only their metrics (`kdplug.config.EvaluationConfig.METRICS`).
    task_kinds: ClassVar[tuple[str, ...]] = ("classification",)
    # True when one run trains tasks of several of those kinds at once (a
    # multi-task student); else a run has one kind, `data.task`.
    mixed_task_kinds: ClassVar[bool] = False
    # The run's `kdplug.tasks.Task` (set by the runner; classification until
    # then): build prediction-layer terms with `self.task.soft_term(...)`
    # and `self.task.hard_term(...)` so the method serves every kind it lists.
    _task: Optional[Task] = None

    @property
    def task(self) -> Task:
        """The run's task kind (`kdplug.tasks.Task`): its soft and hard
        terms, head width and metrics."""
        if self._task is None:
            from kdplug.tasks import get_task

            return get_task("classification")
        return self._task

    @task.setter
    def task(self, task: Optional[Task]) -> None:
        self._task = task

    def build_student(self, teacher: Optional[keras.Model], student_kind: StudentKind,
                      num_classes: int) -> keras.Model:
        """Builds the student; `student_kind` is a configured `StudentKind`.

        The runner has already given the kind what it asked for (e.g. the
        teacher's weights before fine-tuning, `student_kind.pretrained_weights`,
        for `truncated` with `init: pretrained`), so an override that calls
        `student_kind.build(teacher, num_classes)` keeps that behaviour."""
        return student_kind.build(teacher, num_classes)

    def stages(self, teacher: keras.Model, student: keras.Model) -> list[Stage]:
        raise NotImplementedError(f"{type(self).__name__}.stages()")

    @property
    def runner(self) -> Optional[type[Runner]]:
        """The class that runs an experiment with this method; None (the
        default) for `kdplug.run.SingleTaskRunner`: one student trained
        through `stages()`, evaluated on the test split
        (`kdplug.run.runner_class(method)` resolves it).

        A method whose flow differs (several tasks, an ensemble of teachers,
        baseline students, like `mtdnn-ensemble`) returns its own
        `kdplug.run.Runner` subclass, built on the same pieces
        (`StageRunner`, `TeacherSetup`, the report writer), imported inside
        the property so that declaring a method does not import the
        training stack.
        """
        return None

    def data_sources(self, config: ExperimentConfig) -> list[tuple[str, DataConfig, str]]:
        """The data a run with this method reads, for `kdplug validate` and
        the checks before a run starts (`kdplug.run.preflight`).

        Returns `[(field, DataConfig, label_kind)]`: the dotted config field
        the data comes from, its `kdplug.config.DataConfig`, and `"class"`
        `"float"` or `"multi"` (see `kdplug.data.read_splits`). The default
        is the `data:` section, labels read as the run's task kind reads
        them (`data.task`).
        """
        from kdplug.tasks import TASKS

        task = TASKS.get(config.task)
        return [("data", config.data, task.label_kind if task else "class")]

    def evaluate(self, student: keras.Model, test_ds: tf.data.Dataset,
                 run_dir: str) -> Optional[dict[str, Any]]:
        """Method-specific evaluation added to the run's report.

        Called by `kdplug run` after training with the student and the test
        split; return a JSON-able dict (saved under `report["method"]`) or
        None. Files written into `run_dir` belong to the report.
        """
        return None

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        """Checks across config sections, after every section validated.

        Called by `kdplug.config` with the whole `ExperimentConfig`; raise a
        `kdplug.ConfigError` naming the file and field (e.g. a method that
        needs `teacher.finetune`). The default checks nothing.
        """
