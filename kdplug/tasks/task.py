"""The task-kind contract: what a label is and how a run learns it."""

from typing import ClassVar


class Task:
    """A task kind: the labels a run reads, the head it trains, the terms
    that compare teacher and student on that head, and the metrics it is
    measured with.

    Methods build their prediction-layer terms through the run's task
    (`Method.task`), so one method (e.g. `kd`) distils a classifier, a
    regressor or a multi-label tagger: `soft_term` and `hard_term` give
    that kind's form of "match the teacher" and "match the gold label".
    Everything else a method declares (hidden-state, attention or
    embedding terms) does not depend on the task.

    Subclasses set `name` (what `data.task` writes), `label_kind` (how
    `kdplug.data.read_splits` reads the label column) and `primary` (the
    metric reports lead with), and implement the methods below.

    Examples:

    ```python
    task = get_task("regression")
    task.num_outputs(config.data)             # 1
    task.soft_term(temperature=2.0, weight=0.5)  # LogitMSE
    task.metrics(["pearson"], outputs, labels)
    ```
    """

    name: ClassVar[str]
    label_kind: ClassVar[str]
    primary: ClassVar[str]
    # The names of `keras_metrics()` (logged by Keras, `val_<name>` included).
    compiled_metrics: ClassVar[tuple] = ()

    def __init__(self, data=None):
        # The run's `DataConfig`, for kinds with options of their own
        # (extractive QA's windows); None outside a run.
        self.data = data

    def num_outputs(self, data):
        """The head's width for a `DataConfig`."""
        return data.num_classes

    def head_options(self):
        """Options of the teacher's head (`BertClassifier`'s arguments, e.g.
        `per_token`) that students built from it inherit."""
        return {}

    def prepare(self, splits, encoder, log=None):
        """Turns the splits' labels into what the models read, once the
        teacher's tokenizer is known (`encoder`: its `TextEncoder`); in
        place, returns `splits`. Sentence-level tasks need nothing."""
        return splits

    def count(self, examples):
        """How many examples a split's metrics are over (what the report
        calls its examples): one per row, for most kinds."""
        return len(examples)

    def check_student(self, student, kind):
        """Raises `KdplugError` when `student` (built by the student kind
        named `kind`) cannot learn this task; sentence tasks take any."""

    def objective(self):
        """The teacher's fine-tuning objective (`kdplug.teacher.objectives`)."""
        raise NotImplementedError

    def soft_term(self, temperature, weight, **options):
        """The term that matches the teacher's predictions (a `Term`)."""
        raise NotImplementedError

    def hard_term(self, weight, **options):
        """The term that matches the gold labels (a `Term`)."""
        raise NotImplementedError

    def metrics(self, names, outputs, labels):
        """`{name: value}` of `names` for outputs and gold labels."""
        raise NotImplementedError

    def keras_metrics(self):
        """Keras metrics compiled into training (running values in the
        progress line and the history; `[]` when the task's metrics need
        the whole split, logged by `ValidationMetrics` instead)."""
        return []

    def metric_names(self, evaluation):
        """The metrics a run reports: the primary first, then the
        configured ones (`evaluation.metrics`, the task's defaults when
        unset)."""
        names = evaluation.for_kind(self.name)
        return [self.primary, *(name for name in names if name != self.primary)]


def require_per_token_student(student, kind, why):
    """Raises `KdplugError` unless `student` (built by the student kind
    `kind`) gives one prediction per word piece (`per_token`); `why` says
    what the task needs it for."""
    if not getattr(student, "per_token", False):
        from kdplug.errors import KdplugError

        raise KdplugError(
            f"student.kind {kind!r} built a {type(student).__name__} with one "
            f"prediction per sentence; {why}: use student.kind truncated or narrow")
