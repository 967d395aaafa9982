"""`Experiment`: one config, run end to end (what `kdplug run` does)."""

import os

import keras
import yaml

from kdplug import storage
from kdplug.plugin.manager import get_plugin_manager
from kdplug.run.context import DEFAULT_LOG_EVERY_STEPS
from kdplug.run.context import RunContext
from kdplug.training.distribution import precision_policy


class Experiment:
    """Runs a validated config with the runner its method declares.

    `run()` seeds every random generator, sets the dtype policy
    (`training.mixed_precision`), builds the `RunContext` (strategy, run
    folder, logger, timers), writes the resolved `config.yaml` and hands the
    run to `method.runner` (`SingleTaskRunner` unless the method declares
    another). Nothing has to be set on it from outside.

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

    def run(self):
        """Trains, evaluates and reports; returns the report dict."""
        with precision_policy(self.config.training.mixed_precision):
            runner = self._runner()
            self._write_config(runner.context)
            return runner.run()

    def finetune_teacher(self):
        """Only fine-tunes (and caches) the teacher(s); returns their info."""
        with precision_policy(self.config.training.mixed_precision):
            return self._runner().finetune_teacher()

    def _runner(self):
        keras.utils.set_random_seed(self.config.seed)
        context = RunContext.create(self.config, self.plugin_manager,
                                    log_every_steps=self.log_every_steps)
        replicas = context.strategy.num_replicas_in_sync
        context.log.info("strategy: %s, %d replica%s", type(context.strategy).__name__,
                         replicas, "" if replicas == 1 else "s")
        method = context.method()
        return method.runner(method, context)

    def _write_config(self, context):
        os.makedirs(context.run_dir, exist_ok=True)
        storage.write_text(context.path("config.yaml"),
                           yaml.safe_dump(self.config.to_dict(), sort_keys=False))
