"""Training: the `Distiller`, what a step logs, gradient clipping across
replicas, the custom loop for strategies `fit` cannot run, strategies and
precision, optimizers, callbacks and term schedules."""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

if TYPE_CHECKING:  # they need TensorFlow: loaded on first use (`lazy_exports`)
    from kdplug.training.callbacks import ResumableBackup
    from kdplug.training.callbacks import StopOnNaN
    from kdplug.training.callbacks.keep_best_epoch import check_early_stopping
    from kdplug.training.clipping import clip_across_replicas
    from kdplug.training.custom_loop import CustomLoopTrainer
    from kdplug.training.custom_loop import is_chief
    from kdplug.training.distill import distill
    from kdplug.training.distiller import Distiller
    from kdplug.training.distribution import fit_can_jit_compile
    from kdplug.training.distribution import make_strategy
    from kdplug.training.distribution import mirrored_strategy
    from kdplug.training.distribution import precision_policy
    from kdplug.training.distribution import resolve_jit_compile
    from kdplug.training.distribution import resolve_mixed_precision
    from kdplug.training.fused_adam_w import FusedAdamW
    from kdplug.training.optimizers import make_optimizer
    from kdplug.training.term_schedule import TermSchedule
    from kdplug.training.term_schedule import check_schedules

__getattr__, __dir__, __all__ = lazy_exports(__name__)
