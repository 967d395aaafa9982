"""`Runner`: the contract of what runs an experiment for a method."""

from kdplug import storage
from kdplug.errors import KdplugError
from kdplug.evaluation import plots
from kdplug.evaluation.report import write_report

# The trained student, in the run folder (what `load_run` and `kdplug predict` read).
STUDENT_FILE = "student.keras"


class Runner:
    """Runs one experiment with one method, from a ready `RunContext`.

    `Method.runner` names the class (`SingleTaskRunner` by default);
    `kdplug.Experiment` builds the context and calls `run()`. A runner is
    built from shared pieces: `TeacherSetup` (load, check, fine-tune the
    teacher), `StageRunner` (train a stage, resumably), the readers and
    encoders of `kdplug.data`, `kdplug.evaluation` for measuring and
    `write_run_report` here for the files every run leaves.

    Args:
        method: the configured `Method`.
        context: the run's `RunContext`.

    Examples:

    ```python
    class MyRunner(kdplug.run.Runner):
        def run(self):
            ...                       # train with StageRunner(self.context)
            return self.write_run_report(report, student)

    class MyMethod(kdplug.Method):
        @property
        def runner(self):
            return MyRunner
    ```
    """

    # Whether the runner reads `context.data`, the splits of in-memory data
    # passed to `Experiment(config, data=...)`, instead of the config's
    # data sources.
    reads_in_memory_data = False

    def __init__(self, method, context):
        self.method = method
        self.context = context

    def run(self):
        """Runs the experiment; returns the report (a JSON-able dict)."""
        raise NotImplementedError(f"{type(self).__name__}.run()")

    def finetune_teacher(self):
        """Only fine-tunes (and caches) the teacher(s); returns their info
        (what `kdplug finetune-teacher` prints)."""
        raise KdplugError(
            f"method {self.method.name!r} has no separate teacher fine-tuning")

    def save_student(self, student):
        """Saves the trained student as `<run>/student.keras`; returns the path."""
        path = self.context.path(STUDENT_FILE)
        storage.save_model(student, path)  # a re-run's stage may point at it
        return path

    def write_run_report(self, report, student=None, summary=None,
                         plot=plots.write_plots):
        """The files every run leaves, written by the chief only:
        `student.keras`, the plots, `metrics.json` and `summary.md`.

        Args:
            report: the report dict; `report["plots"]` is set here.
            student: the model saved as `student.keras` (None: none).
            summary: `fn(report) -> Markdown` (default: the single-task
                summary).
            plot: `fn(run_dir, report) -> {name: path}`.

        Returns:
            `report`.
        """
        ctx = self.context
        if not ctx.is_chief:  # one writer under multi-worker training
            return report
        if student is not None:
            self.save_student(student)
        report["plots"] = plot(ctx.run_dir, report)
        path = write_report(ctx.run_dir, report, summary)
        ctx.log.info("report: %s", path)
        return report
