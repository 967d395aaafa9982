"""Keras callbacks used by kdplug runs (one class per module)."""

from kdplug.training.callbacks.keep_best_epoch import KeepBestEpoch
from kdplug.training.callbacks.progress_bar import ProgressBar
from kdplug.training.callbacks.progress_line import ProgressLine
from kdplug.training.callbacks.resumable_backup import ResumableBackup
from kdplug.training.callbacks.run_history import RunHistory
from kdplug.training.callbacks.stage_checks import StageChecks
from kdplug.training.callbacks.stop_on_nan import StopOnNaN
from kdplug.training.callbacks.validation_metrics import ValidationMetrics
