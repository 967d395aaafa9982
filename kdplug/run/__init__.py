"""Running an experiment: `Experiment` (the facade `kdplug run` calls),
`RunContext` (what a run shares), the `Runner` contract and the default
`SingleTaskRunner`, and the pieces runners are built from: `StageRunner`
and `TeacherSetup`."""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

if TYPE_CHECKING:  # loaded on first use (`lazy_exports`)
    from kdplug.run.console import progress_logger
    from kdplug.run.context import RunContext
    from kdplug.run.context import Timers
    from kdplug.run.experiment import Experiment
    from kdplug.run.preflight import augmenters_from_config
    from kdplug.run.runner import Runner
    from kdplug.run.runner import random_state_kept
    from kdplug.run.runner import stage_lines
    from kdplug.run.single_task import SingleTaskRunner
    from kdplug.run.single_task import checked_student
    from kdplug.run.single_task import runner_class
    from kdplug.run.stage_runner import StageHistory
    from kdplug.run.stage_runner import StageRunner
    from kdplug.run.teacher_setup import EVAL_BATCH_SIZE
    from kdplug.run.teacher_setup import TeacherSetup
    from kdplug.run.teacher_setup import teacher_seed

__getattr__, __dir__, __all__ = lazy_exports(__name__)
