"""`Runner`: the contract of what runs an experiment for a method."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable
from collections.abc import Iterator
from typing import TYPE_CHECKING
from typing import Any
from typing import Callable
from typing import Optional

import numpy as np

from kdplug import storage
from kdplug.errors import KdplugError
from kdplug.evaluation import plots
from kdplug.evaluation.report import write_report
from kdplug.run_files import STUDENT_FILE

if TYPE_CHECKING:
    import keras

    from kdplug.plugin.method import Method
    from kdplug.plugin.method import Stage
    from kdplug.run.context import RunContext

# A run's report: what `metrics.json` holds (a JSON-able dict).
Report = dict[str, Any]


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

    def __init__(self, method: Method, context: RunContext) -> None:
        self.method = method
        self.context = context

    def run(self) -> Report:
        """Runs the experiment; returns the report (a JSON-able dict)."""
        raise NotImplementedError(f"{type(self).__name__}.run()")

    def check_build(self) -> list[str]:
        """What `kdplug validate --build` checks for this runner's method,
        and what `run()` checks before it fine-tunes any teacher: the
        teacher loaded, the student and the stages built on it as the run
        builds them (nothing trained) and dropped, raising the
        `ConfigError`s the run would raise later. Returns one line per
        stage (`stage_lines`); by default nothing is built (`[]`)."""
        return []

    def finetune_teacher(self) -> Any:
        """Only fine-tunes (and caches) the teacher(s); returns their info
        (what `kdplug finetune-teacher` prints)."""
        raise KdplugError(
            f"method {self.method.name!r} has no separate teacher fine-tuning")

    def save_student(self, student: keras.Model) -> str:
        """Saves the trained student as `<run>/student.keras`; returns the path."""
        path = self.context.path(STUDENT_FILE)
        storage.save_model(student, path)  # a re-run's stage may point at it
        return path

    def write_run_report(
            self, report: Report, student: Optional[keras.Model] = None,
            summary: Optional[Callable[[Report], str]] = None,
            plot: Callable[[str, Report], dict[str, str]] = plots.write_plots) -> Report:
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


def stage_lines(stages: Iterable[Stage]) -> list[str]:
    """`stage <name>: <term>, <term>` per stage (`kdplug validate --build`)."""
    return [f"stage {stage.name}: {', '.join(term.name for term in stage.terms)}"
            for stage in stages]


@contextlib.contextmanager
def random_state_kept() -> Iterator[None]:
    """Puts Python's and NumPy's random states (which seed Keras'
    initialisers) back after the block: a student built only to be checked
    draws nothing the run's own models would have drawn."""
    states = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
