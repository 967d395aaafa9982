"""`Experiment`: one config, run end to end (what `kdplug run` does)."""

import contextlib
import copy
import logging
import os

import keras
import yaml

from kdplug import storage
from kdplug.data.examples import splits_fingerprint
from kdplug.data.readers import IN_MEMORY
from kdplug.data.readers import read_splits
from kdplug.errors import ConfigError
from kdplug.plugin.manager import get_plugin_manager
from kdplug.run.context import DEFAULT_LOG_EVERY_STEPS
from kdplug.run.context import RunContext
from kdplug.run.preflight import check_inputs
from kdplug.run.run_folder import RunFolder
from kdplug.run.run_folder import run_settings
from kdplug.run.single_task import runner_class
from kdplug.run_files import CONFIG
from kdplug.run_files import SOURCE
from kdplug.training.distribution import precision_policy

log = logging.getLogger(__name__)


class Experiment:
    """Runs a validated config with the runner its method declares.

    `run()` resolves the run folder once, refuses one that holds the
    user's own files, locks it (one run at a time), checks that what the
    folder already holds was trained with the same settings (`RunFolder`;
    `fresh=True` first moves an old run folder aside), seeds every random
    generator, sets the dtype policy (`training.mixed_precision`), builds the
    `RunContext` (strategy, run folder, logger, timers), records the settings
    and the resolved `config.yaml`, and hands the run to `method.runner`
    (`SingleTaskRunner` unless the method declares another). Nothing has to
    be set on it from outside.

    Args:
        config: a validated `kdplug.config.ExperimentConfig`.
        plugin_manager: defaults to the process-wide one.
        log_every_steps: per-step scalars every this many optimizer steps
            (TensorBoard, `report["step_history"]`, the loss curves).
        data: in-memory data read instead of the config's data sources: a
            `datasets.Dataset` or `DatasetDict`, a pandas `DataFrame`, a
            dict of columns, a list of row dicts, or a dict of splits of
            these (`kdplug.data.examples_from_dataset`). The config's `data`
            section still says how to read it (columns, task, class names,
            split names, sequence length); the run records `data.path:
            <in memory>` and the data's content fingerprint, so a re-run
            with other data is refused like a changed file, and the teacher
            cache tells datasets apart. Single-task methods only.

    Examples:

    ```python
    report = Experiment(load_config("configs/quickstart.yaml")).run()
    report["student"]["accuracy"]
    info = Experiment(config).finetune_teacher()
    # the config's data section, other rows:
    Experiment(config, data=datasets.load_from_disk("my_data")).run()
    ```
    """

    def __init__(self, config, plugin_manager=None,
                 log_every_steps=DEFAULT_LOG_EVERY_STEPS, data=None):
        self.plugin_manager = plugin_manager or get_plugin_manager()
        self.log_every_steps = log_every_steps
        # in-memory data, read once here: its content fingerprint keys the
        # run settings and the teacher cache; the checks and the runner use
        # the same splits
        self.splits = self.data_fingerprint = None
        if data is not None:
            config = in_memory_config(config)
            self.splits = self._read(config, data)
            self.data_fingerprint = splits_fingerprint(self.splits)
        self.config = config

    def run(self, fresh=False):
        """Trains, evaluates and reports; returns the report dict.

        Args:
            fresh: move an existing run folder aside (`<run>.old-<time>`)
                and start over (`kdplug run --fresh`).
        """
        # resolved once: `output_dir: .` must not follow the working folder
        folder = RunFolder(self.config.run_dir())
        folder.check_owner(self.config.file, fresh)  # before anything is written
        for line in check_inputs(self.config, self.plugin_manager, self.splits):
            log.info("inputs: %s", line)
        with contextlib.ExitStack() as stack:
            stack.enter_context(folder.lock())
            if fresh:
                moved = folder.move_aside(self.config.file)
                if moved:
                    log.info("run folder: moved the previous run to %s", moved)
                stack.enter_context(folder.lock())  # the new, empty folder
            settings = run_settings(self.config, self.data_fingerprint)
            folder.check(settings, self.config.file)
            with precision_policy(self.config.training.mixed_precision):
                runner = self._runner(settings, folder.path)
                folder.record(settings)
                self._write_config(runner.context)
                return runner.run()

    def finetune_teacher(self):
        """Only fine-tunes (and caches) the teacher(s); returns their info."""
        check_inputs(self.config, self.plugin_manager, self.splits)
        with precision_policy(self.config.training.mixed_precision):
            return self._runner().finetune_teacher()

    def _runner(self, settings=None, run_dir=None):
        keras.utils.set_random_seed(self.config.seed)
        context = RunContext.create(self.config, self.plugin_manager,
                                    log_every_steps=self.log_every_steps,
                                    settings=settings, data=self.splits,
                                    data_fingerprint=self.data_fingerprint,
                                    run_dir=run_dir)
        replicas = context.strategy.num_replicas_in_sync
        context.log.info("strategy: %s, %d replica%s", type(context.strategy).__name__,
                         replicas, "" if replicas == 1 else "s")
        if self.config.training.mixed_precision == "auto":  # the policy it set
            policy = keras.config.dtype_policy().name
            context.log.info("training.mixed_precision: auto: %s", policy
                             if policy != "float32" else
                             "float32 (no native bfloat16 on this machine)")
        method = context.method()
        return runner_class(method)(method, context)

    def _read(self, config, data):
        """The splits of in-memory `data`, read as the run reads its data
        section; a method whose runner reads no in-memory data (or reads
        more than the `data` section) is an error naming it."""
        method = self.plugin_manager.methods.get(config.method.name)(config.method_config)
        sources = list(method.data_sources(config))
        if not runner_class(method).reads_in_memory_data or [
                s[0] for s in sources] != ["data"]:
            raise ConfigError(
                f"method {config.method.name!r} reads its data from the files its "
                "config names; Experiment(config, data=...) works with single-task "
                "methods", config.file, "method.name")
        _, source, label_kind = sources[0]
        return read_splits(source, label_kind=label_kind, seed=config.seed, data=data)

    def _write_config(self, context):
        """`config.yaml` (the resolved config) and `source.json` (the file
        it came from: its relative paths resolve against that file's
        folder, which `kdplug analyze` needs to reload the run)."""
        storage.write_text(context.path(CONFIG),
                           yaml.safe_dump(self.config.to_dict(), sort_keys=False))
        storage.write_json(context.path(SOURCE), {
            "config_file": self.config.file and os.path.abspath(self.config.file),
            "base_dir": self.config.base_dir,
        })


def in_memory_config(config):
    """A copy of `config` whose data section reads in-memory data: its
    sources (`path`, `train`, `dev`, `test`) become `path: <in memory>`,
    every other field (columns, task, class names, splits) is kept."""
    config = copy.deepcopy(config)
    config.data.path = IN_MEMORY
    config.data.train = config.data.dev = config.data.test = None
    return config
