import dataclasses
import gc
import time

import keras
import numpy as np

from kdplug.cache import TeacherCache
from kdplug.config import CacheConfig
from kdplug.finetune import TeacherFinetuner
from kdplug.report import count_params
from kdplug.strategy import fit_can_jit_compile
from kdplug.teacher import load_teacher
from kdplug_plugins.mtdnn.metrics import task_metrics
from kdplug_plugins.mtdnn.regression_finetuner import RegressionTeacherFinetuner


def average_outputs(member_outputs, task_type, temperature=1.0):
    """The ensemble's soft targets from its members' raw outputs.

    Classification: the average of the members' class probabilities,
    `mean_k softmax(z_k / T)`. Regression: the average prediction
    `mean_k z_k`.

    Args:
        member_outputs: list of `(n, width)` arrays, one per teacher.
        task_type: `classification` or `regression`.
        temperature: `T` (classification only).

    Returns:
        float32 `(n, width)`.

    Examples:

    >>> z = [np.array([[0.0, 0.0]]), np.array([[0.0, np.log(3.0)]])]
    >>> average_outputs(z, "classification").round(3).tolist()
    [[0.375, 0.625]]
    >>> average_outputs([np.array([[1.0]]), np.array([[2.0]])], "regression").tolist()
    [[1.5]]
    """
    stacked = np.stack([np.asarray(m, dtype="float64") for m in member_outputs])
    if task_type == "regression":
        return stacked.mean(axis=0).astype("float32")
    z = stacked / float(temperature)
    z = z - z.max(axis=-1, keepdims=True)
    probs = np.exp(z)
    probs /= probs.sum(axis=-1, keepdims=True)
    return probs.mean(axis=0).astype("float32")


class TeacherEnsemble:
    """K fine-tuned teachers for one task and their averaged soft targets.

    Member `k` is the configured teacher fine-tuned on the task with seed
    `config.seed + k` (a fresh head and data order per seed), through
    `TeacherFinetuner`'s cache (the seed is part of its key, so each member
    is trained once and reloaded later). Each member then runs once over the
    task's training and test examples through `kdplug.cache.TeacherCache`
    (keyed by the member's weights, the texts and the tokenisation), so a
    re-run reads its outputs from disk instead of running K teachers. The
    averages are cheap and computed on load, so changing `temperature`
    reuses the cached logits (no teacher forward pass).

    Args:
        config: the `ExperimentConfig`.
        task: a read `kdplug_plugins.mtdnn.task.Task`.
        encoder: the `kdplug.data.TextEncoder` shared by teachers and students.
        size: K, the number of members.
        temperature: `T` of the averaged classification targets.
        strategy: the `tf.distribute` strategy teachers are built under.
        log: a `print`-like function.

    Examples:

    ```python
    ensemble = TeacherEnsemble(config, task, encoder, size=2, temperature=1.0,
                               strategy=tf.distribute.get_strategy())
    result = ensemble.run()
    result["train_targets"].shape          # (len(task.train), num_classes)
    result["test_metrics"]["accuracy"]     # the ensemble on the test split
    ```
    """

    def __init__(self, config, task, encoder, size, temperature, strategy, log=print):
        self.config = config
        self.task = task
        self.encoder = encoder
        self.size = int(size)
        self.temperature = float(temperature)
        self.strategy = strategy
        self.log = log

    @property
    def seeds(self):
        return [self.config.seed + k for k in range(self.size)]

    def member_config(self, seed):
        """The experiment config as one member's fine-tuning sees it."""
        return dataclasses.replace(self.config, data=self.task.data, seed=seed)

    def run(self):
        """Fine-tunes (or loads) every member and collects its outputs.

        Returns:
            a dict: `train_targets` and `test_targets` (averaged, float32),
            `test_metrics` (the ensemble's), `members` (per seed: fine-tuning
            info, cache info and test metrics), `params` (of one member).
        """
        task = self.task
        train, test = task.splits["train"], task.splits["test"]
        examples = train.concat(test)
        members, outputs, params = [], [], None
        for seed in self.seeds:
            start = time.perf_counter()
            teacher, finetune_info = self._finetuned(seed)
            params = count_params(teacher)
            logits, cache_info = self._outputs(teacher, examples)
            del teacher
            gc.collect()
            outputs.append(logits)
            test_logits = logits[len(train):]
            members.append({
                "seed": seed,
                "finetune": finetune_info,
                "teacher_output_cache": cache_info,
                "test_metrics": task_metrics(task.type, test_logits, test.labels),
                "seconds": time.perf_counter() - start,
            })
        n = len(train)
        test_average = average_outputs([o[n:] for o in outputs], task.type, 1.0)
        return {
            "train_targets": average_outputs(
                [o[:n] for o in outputs], task.type, self.temperature),
            "test_targets": test_average,
            "test_metrics": task_metrics(task.type, test_average, test.labels),
            "members": members,
            "params": params,
        }

    def _finetuned(self, seed):
        cfg = self.config
        task = self.task
        keras.utils.set_random_seed(seed)  # the member's fresh head
        with self.strategy.scope():
            teacher, _, source = load_teacher(cfg.teacher, task.num_outputs,
                                              cfg.resolve_path)
        ft = cfg.teacher.finetune
        train_ds = self.encoder.dataset(task.splits["train"], ft.batch_size,
                                        shuffle=True, seed=seed)
        val = task.splits.get("validation")
        val_ds = self.encoder.dataset(val, 64) if val is not None else None
        finetuner_cls = (RegressionTeacherFinetuner if task.is_regression
                         else TeacherFinetuner)
        self.log(f"task {task.name}: teacher {seed - cfg.seed + 1}/{self.size} "
                 f"(seed {seed})")
        with self.strategy.scope():
            info = finetuner_cls(self.member_config(seed), source, self.log).run(
                teacher, train_ds, val_ds,
                jit_compile=(cfg.training.jit_compile
                             and fit_can_jit_compile(self.strategy)),
            )
        teacher.trainable = False
        return teacher, info

    def _outputs(self, teacher, examples):
        cache = self.config.cache or CacheConfig()
        outputs = TeacherCache(
            teacher, self.encoder, examples, ["logits"], dtype=cache.dtype,
            shard_size=cache.shard_size, batch_size=cache.batch_size,
            log=self.log, run_eagerly=not self.config.training.jit_compile,
        )
        info = outputs.precompute()
        return outputs.load()["teacher/logits"], info
