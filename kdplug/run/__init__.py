"""Running an experiment: `Experiment` (the facade `kdplug run` calls),
`RunContext` (what a run shares), the `Runner` contract and the default
`SingleTaskRunner`, and the pieces runners are built from: `StageRunner`
and `TeacherSetup`."""

from kdplug._lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "Experiment": "kdplug.run.experiment",
    "RunContext": "kdplug.run.context",
    "Timers": "kdplug.run.context",
    "Runner": "kdplug.run.runner",
    "SingleTaskRunner": "kdplug.run.single_task",
    "StageRunner": "kdplug.run.stage_runner",
    "StageHistory": "kdplug.run.stage_runner",
    "TeacherSetup": "kdplug.run.teacher_setup",
})
