import dataclasses
import gc
import time

import keras
import numpy as np

from kdplug import keys
from kdplug.config import CacheConfig
from kdplug.evaluation import count_params
from kdplug.evaluation import task_metrics
from kdplug.run import TeacherSetup
from kdplug.teacher import ClassificationObjective
from kdplug.teacher import RegressionObjective
from kdplug.teacher import TeacherCache
from kdplug.training import resolve_jit_compile


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
    `config.seed + k` (a fresh head and data order per seed), through the
    run's `TeacherSetup` with the task's objective (classification or
    regression), so through the fine-tuning cache (the seed is part of its
    key: each member is trained once and reloaded later). Each member then
    runs once over the task's training and test examples through
    `kdplug.teacher.TeacherCache`
    (keyed by the member's weights, the texts and the tokenisation), so a
    re-run reads its outputs from disk instead of running K teachers. The
    averages are cheap and computed on load, so changing `temperature`
    reuses the cached logits (no teacher forward pass).

    Args:
        context: the run's `kdplug.run.RunContext`.
        task: a read `kdplug_plugins.mtdnn.task.Task`.
        encoder: the `kdplug.data.TextEncoder` shared by teachers and students.
        size: K, the number of members.
        temperature: `T` of the averaged classification targets.

    Examples:

    ```python
    ensemble = TeacherEnsemble(context, task, encoder, size=2, temperature=1.0)
    result = ensemble.run()
    result["train_targets"].shape          # (len(task.train), num_classes)
    result["test_metrics"]["accuracy"]     # the ensemble on the test split
    ```
    """

    def __init__(self, context, task, encoder, size, temperature):
        self.context = context
        self.config = context.config
        self.task = task
        self.encoder = encoder
        self.size = int(size)
        self.temperature = float(temperature)

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
                "test_metrics": task_metrics(task.type, test_logits, test.labels,
                                             self._extra_metrics()),
                "seconds": time.perf_counter() - start,
            })
        n = len(train)
        test_average = average_outputs([o[n:] for o in outputs], task.type, 1.0)
        return {
            "train_targets": average_outputs(
                [o[:n] for o in outputs], task.type, self.temperature),
            "test_targets": test_average,
            "test_metrics": task_metrics(task.type, test_average, test.labels,
                                         self._extra_metrics()),
            "members": members,
            "params": params,
        }

    def _extra_metrics(self):
        """`evaluation.metrics` of this task's kind (beyond its defaults)."""
        return self.config.evaluation.for_kind(self.task.type)

    def _finetuned(self, seed):
        task = self.task
        keras.utils.set_random_seed(seed)  # the member's fresh head
        setup = TeacherSetup(self.context)
        teacher, _, source = setup.load(task.num_outputs)
        self.context.log.info("task %s: teacher %d/%d (seed %d)", task.name,
                              seed - self.config.seed + 1, self.size, seed)
        objective = RegressionObjective() if task.is_regression else ClassificationObjective()
        info = setup.finetune(teacher, source, self.encoder, task.splits["train"],
                              task.splits.get("validation"), objective=objective,
                              config=self.member_config(seed))
        teacher.trainable = False
        return teacher, info

    def _outputs(self, teacher, examples):
        cache = self.config.cache or CacheConfig()
        outputs = TeacherCache(
            teacher, self.encoder, examples, ["logits"], dtype=cache.dtype,
            shard_size=cache.shard_size, batch_size=cache.batch_size,
            jit_compile=resolve_jit_compile(self.config.training.jit_compile),
        )
        info = outputs.precompute()
        return outputs.load()[keys.teacher_key("logits")], info
