"""Training: the `Distiller`, what a step logs, gradient clipping across
replicas, the custom loop for strategies `fit` cannot run, strategies and
precision, optimizers, callbacks and term schedules."""

from kdplug._lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "Distiller": "kdplug.training.distiller",
    "CustomLoopTrainer": "kdplug.training.custom_loop",
    "is_chief": "kdplug.training.custom_loop",
    "clip_across_replicas": "kdplug.training.clipping",
    "make_strategy": "kdplug.training.distribution",
    "mirrored_strategy": "kdplug.training.distribution",
    "precision_policy": "kdplug.training.distribution",
    "make_optimizer": "kdplug.training.optimizers",
    "FusedAdamW": "kdplug.training.fused_adam_w",
    "StopOnNaN": "kdplug.training.callbacks",
    "ResumableBackup": "kdplug.training.callbacks",
    "TermSchedule": "kdplug.training.term_schedule",
})
