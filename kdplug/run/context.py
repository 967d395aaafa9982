"""`RunContext`: what every runner and stage of a run shares."""

import dataclasses
import logging
import os
import time

from kdplug import storage
from kdplug.data.length_buckets import LengthBuckets
from kdplug.plugin.manager import get_plugin_manager
from kdplug.run.preflight import build_augmenters
from kdplug.run.run_folder import run_settings
from kdplug.tasks import TASKS
from kdplug.tasks import get_task
from kdplug.training.custom_loop import is_chief
from kdplug.training.distribution import make_strategy
from kdplug.training.distribution import resolve_jit_compile

DEFAULT_LOG_EVERY_STEPS = 10


class RunContext:
    """Everything a run shares, built once, up front, before any runner.

    A runner (`kdplug.run.Runner`) receives it and reads from it; nothing
    is set on it from outside afterwards.

    Args:
        config: the validated `ExperimentConfig`.
        plugins: the `kdplug.plugin.PluginManager` (registries and hooks).
        strategy: the `tf.distribute.Strategy` every model is built under.
        run_dir: the run folder (absolute).
        log_every_steps: per-step scalars (TensorBoard, the report's
            `step_history`, the loss curves) every this many optimizer steps.
            Not part of the config: it changes what is logged, not what is
            trained.
        settings: what the run's results depend on (`run_settings(config)`,
            computed when not given); every finished stage records its
            fingerprint, and a stage finished with other settings is never
            reused.
        data: the splits of in-memory data (`Experiment(config,
            data=...)`, which reads them once; the config's `data.path` is
            then `<in memory>`), read instead of the config's data sources,
            or None.
        data_fingerprint: the content fingerprint of `data`
            (`kdplug.data.examples.splits_fingerprint`); it stands for the
            data files' in the cache keys.

    Attributes:
        log: the run's `logging.Logger` (`kdplug.run`).
        timers: a `Timers`; `report["seconds"]` is `timers.seconds`.
        settings_fingerprint: `storage.fingerprint(settings)`.

    Examples:

    ```python
    context = RunContext.create(load_config("configs/quickstart.yaml"))
    with context.strategy.scope():
        ...
    with context.timers("evaluation"):
        ...
    ```
    """

    def __init__(self, config, plugins, strategy, run_dir,
                 log_every_steps=DEFAULT_LOG_EVERY_STEPS, settings=None,
                 data=None, data_fingerprint=None):
        if int(log_every_steps) < 1:
            raise ValueError(f"log_every_steps must be >= 1, got {log_every_steps}")
        if (data is None) != (data_fingerprint is None):
            raise ValueError("in-memory data needs its data_fingerprint (and only it)")
        # the settings keep `jit_compile: auto` as written; what runs is a bool
        self.config = dataclasses.replace(config, training=dataclasses.replace(
            config.training, jit_compile=resolve_jit_compile(config.training.jit_compile)))
        self.plugins = plugins
        self.strategy = strategy
        self.run_dir = run_dir
        self.log_every_steps = int(log_every_steps)
        self.data = data
        self.data_fingerprint = data_fingerprint
        self.settings = settings if settings is not None else run_settings(
            config, data_fingerprint)
        self.settings_fingerprint = storage.fingerprint(self.settings)
        self.log = logging.getLogger("kdplug.run")
        self.timers = Timers()
        self.encoders = {}  # TeacherSetup.encoder's, one per tokenizer and input kind
        self._logged_buckets = False  # length_buckets() logs once a run

    @classmethod
    def create(cls, config, plugin_manager=None, strategy=None,
               log_every_steps=DEFAULT_LOG_EVERY_STEPS, settings=None,
               data=None, data_fingerprint=None, run_dir=None):
        """The context of `config`: the process-wide plugin manager, the
        strategy `training.strategy` names and the run folder
        `config.run_dir()` resolves to now, unless given (`Experiment.run`
        passes the folder it resolved and locked)."""
        return cls(
            config,
            plugin_manager or get_plugin_manager(),
            strategy or make_strategy(config.training.strategy),
            run_dir or config.run_dir(),
            log_every_steps=log_every_steps,
            settings=settings,
            data=data,
            data_fingerprint=data_fingerprint,
        )

    @property
    def is_chief(self):
        """Whether this process writes the run's files (one writer under
        multi-worker training)."""
        return is_chief(self.strategy)

    def path(self, *parts):
        """A path inside the run folder."""
        return os.path.join(self.run_dir, *parts)

    def method(self):
        """The configured `Method` (`method.name` with its options), told
        the run's task kind (`Method.task`)."""
        cfg = self.config
        method = self.plugins.methods.get(cfg.method.name)(cfg.method_config)
        if self.task is not None:
            method.task = self.task
        return method

    @property
    def task(self):
        """The run's `kdplug.tasks.Task` (`config.task`), one instance per
        run (it learns the class names when the data is read); None for a
        method's own kind that has none (e.g. seq2seq)."""
        if not hasattr(self, "_task"):
            kind = self.config.task
            self._task = get_task(kind, self.config.data) if kind in TASKS else None
        return self._task

    def student_kind(self):
        """The configured `StudentKind` (`student.kind` with its options)."""
        cfg = self.config
        return self.plugins.students.get(cfg.student.name)(cfg.student_config)

    def augment_steps(self):
        """The `augment:` section as `AugmentStep`s (augmenters built, their
        errors naming their `augment[i]` entry: `build_augmenters`)."""
        return build_augmenters(self.config, self.plugins.augmenters)

    def length_buckets(self, kind=LengthBuckets):
        """`training.length_buckets` as a `kind` (a `LengthBuckets` or a
        subclass for other inputs), or None when the section is off. The
        first call of a run logs the setting."""
        section = self.config.training.length_buckets
        if section is None:
            return None
        if not self._logged_buckets:
            self._logged_buckets = True
            self.log.info(
                "length buckets: training batches sorted by length in windows of %d "
                "batches, each cut to its longest sentence (multiples of %d)",
                section.window, section.multiple)
        return kind(section.window, section.multiple)


class Timers:
    """Wall time per named part of a run (what `report["seconds"]` lists),
    and the parts that finished a killed run's work (`report["resumed"]`:
    their seconds are this run's share).

    Examples:

    ```python
    timers = Timers()
    with timers("teacher fine-tuning"):
        ...
    timers.seconds  # {"teacher fine-tuning": 199.2}
    timers.mark_resumed("stage distill", "resumed after epoch 2")
    timers.resumed  # {"stage distill": "resumed after epoch 2"}
    ```
    """

    def __init__(self):
        self.seconds = {}
        self.resumed = {}

    def __call__(self, name):
        return _Timed(self.seconds, name)

    def mark_resumed(self, name, why):
        """Records that part `name` went on from a killed run's work (`why`)."""
        self.resumed[name] = why


class _Timed:
    def __init__(self, seconds, name):
        self.seconds = seconds
        self.name = name

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        elapsed = time.perf_counter() - self.start
        self.seconds[self.name] = self.seconds.get(self.name, 0.0) + elapsed
        return False
