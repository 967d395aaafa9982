import dataclasses
from typing import Annotated
from typing import List
from typing import Literal

import kdplug
from kdplug.config import Fraction
from kdplug.config import Items
from kdplug.config import PositiveFloat
from kdplug.config import PositiveInt
from kdplug.config import Probability
from kdplug.errors import ConfigError
from kdplug_plugins.mtdnn.task_config import TaskConfig

BASELINES = ("single_task", "multi_task")


class MTDNNEnsembleMethod(kdplug.Method):
    """MT-DNN ensemble distillation (Liu et al. 2019, "Improving Multi-Task
    Deep Neural Networks via Knowledge Distillation for Natural Language
    Understanding").

    Teachers: for every task with `teacher: true`, `ensemble_size` copies of
    the configured teacher fine-tuned on that task with seeds `seed`,
    `seed + 1`, ... (each cached by `TeacherFinetuner`); their outputs on the
    training examples are computed once (`TeacherCache`) and averaged: class
    probabilities for classification, predictions for regression.

    Student: the configured student kind (e.g. `truncated`) cut from the
    pretrained teacher as a shared encoder, with one head per task
    (`MultiTaskStudent`). Every mini-batch comes from one task, drawn
    `proportional`ly (every batch of every task once per epoch, shuffled) or
    with `temperature` sampling (`p_t ∝ n_t^(1/T)`).

    Loss of an example of task `t`: with a teacher,
    `(1 - alpha) * hard + alpha * soft` (`alpha = 0.5`: the paper's mean of
    the two); without one, `hard`. Classification: `hard` is cross-entropy
    with the gold label, `soft` cross-entropy with the averaged
    probabilities; regression: squared errors against the gold value and
    the ensemble's average. Terms: `hard` (`MultiTaskHardLoss`) and `soft`
    (`MultiTaskSoftLoss`, weight `alpha`).

    `kdplug run` also trains the `baselines` (single-task students and a
    multi-task student without distillation, same student and budget) and
    reports every variant's test metrics per task (accuracy; Pearson and
    Spearman for regression), next to the ensembles'.

    Config:
        tasks: the tasks (see `TaskConfig`); fields left out come from
            `data:`.
        ensemble_size: teachers per task (K).
        alpha: the soft loss's share where a teacher exists.
        temperature: softmax temperature of the averaged teacher
            probabilities and the student's soft cross-entropy (1 in the
            paper).
        sampling: `proportional` or `temperature`.
        sampling_temperature: `T` of temperature sampling.
        baselines: which comparison students to train as well.
        head_dropout: dropout before the task heads.

    Examples:

    ```yaml
    method:
      name: mtdnn-ensemble
      ensemble_size: 2
      sampling: temperature
      sampling_temperature: 2.0
      tasks:
        - name: movie_sentiment
        - name: movie_score
          type: regression
          label_column: score
        - name: tweet_sentiment
          path: ../data/tweets.tsv
    ```
    """

    name = "mtdnn-ensemble"
    description = "MT-DNN: multi-task student distilled from per-task teacher ensembles"
    default_student = {"kind": "truncated", "layers": "every_other"}
    task_kinds = ("classification", "regression")
    mixed_task_kinds = True  # each task of `tasks:` has its own type

    @dataclasses.dataclass
    class Config:
        tasks: Annotated[List[TaskConfig],
                         Items(min=1, distinct=True, key="name", noun="task")]
        ensemble_size: PositiveInt = 2
        alpha: Probability = 0.5
        temperature: PositiveFloat = 1.0
        sampling: Literal["proportional", "temperature"] = "proportional"
        sampling_temperature: PositiveFloat = 2.0
        baselines: Annotated[List[Literal["single_task", "multi_task"]],
                             Items(distinct=True, noun="variant")] = dataclasses.field(
            default_factory=lambda: list(BASELINES))
        head_dropout: Fraction = 0.1


    @classmethod
    def check_config(cls, config):
        """Checks across sections (called by `kdplug.config`); raises
        `ConfigError` naming the field."""
        tasks = config.method_config.tasks
        with_teacher = [t.name for t in tasks if t.teacher]
        if with_teacher and config.teacher.finetune is None:
            raise ConfigError(
                f"mtdnn-ensemble fine-tunes ensemble_size teachers per task "
                f"(tasks with a teacher: {', '.join(with_teacher)}); add a "
                "teacher.finetune section, or set teacher: false on those tasks",
                config.file, "teacher.finetune", None,
            )
        if config.teacher.finetune and config.teacher.finetune.seed is not None:
            raise ConfigError(
                "mtdnn-ensemble seeds each ensemble member itself (seed, seed + 1, "
                "...); one teacher.finetune.seed would make every member the same "
                "model; remove it", config.file, "teacher.finetune.seed",
                config.teacher.finetune.seed)
        from kdplug_plugins.mtdnn.task import Task

        for i, task in enumerate(tasks):
            if not Task.resolve(task, config.data).data.has_test:
                raise ConfigError(
                    "mtdnn-ensemble evaluates every task on its test split, and "
                    "this task's data has none (data.test_split is null, or no "
                    "data.test)", config.file, f"method.tasks[{i}]", task.name)
        if config.augment:
            raise ConfigError("mtdnn-ensemble does not use augmenters",
                              config.file, "augment", config.augment)
        if getattr(config.student_config, "input", None) == "word_ids":
            raise ConfigError(
                "mtdnn-ensemble needs a transformer student with a pooled "
                "output (truncated, narrow, bottleneck)",
                config.file, "student.kind", config.student.name,
            )

    def terms(self, tasks, distill=True):
        """The loss terms for a student with heads `tasks` (head specs):
        `[hard, soft]` with distillation, `[hard]` without."""
        from kdplug_plugins.mtdnn.multi_task_hard_loss import MultiTaskHardLoss
        from kdplug_plugins.mtdnn.multi_task_soft_loss import MultiTaskSoftLoss

        cfg = self.config
        if not distill or cfg.alpha == 0.0:
            return [MultiTaskHardLoss(tasks, alpha=0.0, name="hard")]
        terms = [MultiTaskHardLoss(tasks, alpha=cfg.alpha, name="hard")]
        terms.append(MultiTaskSoftLoss(tasks, temperature=cfg.temperature,
                                       weight=cfg.alpha, name="soft"))
        return terms

    def stages(self, teacher, student):
        """One stage training a `MultiTaskStudent` on batches that carry
        `task`, `teacher/targets` and `teacher/present` (what `kdplug run`
        builds; see `MultiTaskRunner.dataset`)."""
        return [kdplug.Stage("multi_task_kd", self.terms(student.tasks))]

    def data_sources(self, config):
        """Every task's data (`method.tasks[i]`), resolved against `data:`."""
        from kdplug_plugins.mtdnn.task import Task

        return [
            (f"method.tasks[{i}]", task.data,
             "float" if task.is_regression else "class")
            for i, task in enumerate(
                Task.resolve(t, config.data) for t in self.config.tasks)
        ]

    @property
    def runner(self):
        """`MultiTaskRunner`: teacher ensembles per task, the baselines and
        the distilled multi-task student (not the single-task flow)."""
        from kdplug_plugins.mtdnn.multi_task_runner import MultiTaskRunner

        return MultiTaskRunner
