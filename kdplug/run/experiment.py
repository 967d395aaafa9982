"""`Experiment`: one config, run end to end (what `kdplug run` does)."""

import contextlib
import logging
import os

import keras
import yaml

from kdplug import storage
from kdplug.plugin.manager import get_plugin_manager
from kdplug.run.context import DEFAULT_LOG_EVERY_STEPS
from kdplug.run.context import RunContext
from kdplug.run.preflight import check_inputs
from kdplug.run.run_folder import RunFolder
from kdplug.run.run_folder import run_settings
from kdplug.training.distribution import precision_policy

log = logging.getLogger(__name__)

# Where the run's config came from (`Experiment._write_config`).
SOURCE = "source.json"


class Experiment:
    """Runs a validated config with the runner its method declares.

    `run()` locks the run folder (one run at a time), checks that what the
    folder already holds was trained with the same settings (`RunFolder`;
    `fresh=True` first moves an old folder aside), seeds every random
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

    Examples:

    ```python
    report = Experiment(load_config("configs/quickstart.yaml")).run()
    report["student"]["accuracy"]
    info = Experiment(config).finetune_teacher()
    ```
    """

    def __init__(self, config, plugin_manager=None,
                 log_every_steps=DEFAULT_LOG_EVERY_STEPS):
        self.config = config
        self.plugin_manager = plugin_manager or get_plugin_manager()
        self.log_every_steps = log_every_steps

    def run(self, fresh=False):
        """Trains, evaluates and reports; returns the report dict.

        Args:
            fresh: move an existing run folder aside (`<run>.old-<time>`)
                and start over (`kdplug run --fresh`).
        """
        for line in check_inputs(self.config, self.plugin_manager):
            log.info("inputs: %s", line)
        folder = RunFolder(self.config.run_dir())
        with contextlib.ExitStack() as stack:
            stack.enter_context(folder.lock())
            if fresh:
                moved = folder.move_aside()
                if moved:
                    log.info("run folder: moved the previous run to %s", moved)
                stack.enter_context(folder.lock())  # the new, empty folder
            settings = run_settings(self.config)
            folder.check(settings, self.config.file)
            with precision_policy(self.config.training.mixed_precision):
                runner = self._runner(settings)
                folder.record(settings)
                self._write_config(runner.context)
                return runner.run()

    def finetune_teacher(self):
        """Only fine-tunes (and caches) the teacher(s); returns their info."""
        check_inputs(self.config, self.plugin_manager)
        with precision_policy(self.config.training.mixed_precision):
            return self._runner().finetune_teacher()

    def _runner(self, settings=None):
        keras.utils.set_random_seed(self.config.seed)
        context = RunContext.create(self.config, self.plugin_manager,
                                    log_every_steps=self.log_every_steps,
                                    settings=settings)
        replicas = context.strategy.num_replicas_in_sync
        context.log.info("strategy: %s, %d replica%s", type(context.strategy).__name__,
                         replicas, "" if replicas == 1 else "s")
        method = context.method()
        return method.runner(method, context)

    def _write_config(self, context):
        """`config.yaml` (the resolved config) and `source.json` (the file
        it came from: its relative paths resolve against that file's
        folder, which `kdplug analyze` needs to reload the run)."""
        storage.write_text(context.path("config.yaml"),
                           yaml.safe_dump(self.config.to_dict(), sort_keys=False))
        storage.write_json(context.path(SOURCE), {
            "config_file": self.config.file and os.path.abspath(self.config.file),
            "base_dir": self.config.base_dir,
        })
