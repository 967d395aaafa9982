import json
import math
import os
import time

import keras
import numpy as np

import kdplug
from kdplug import plots
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.errors import ConfigError
from kdplug.multi_worker import is_chief
from kdplug.report import count_params
from kdplug.report import first_examples
from kdplug.report import latency_ms
from kdplug.teacher import load_teacher
from kdplug.term_schedule import check_schedules
from kdplug_plugins.mtdnn.metrics import PRIMARY
from kdplug_plugins.mtdnn.metrics import predict_outputs
from kdplug_plugins.mtdnn.metrics import task_metrics
from kdplug_plugins.mtdnn.multi_task_student import MultiTaskStudent
from kdplug_plugins.mtdnn.sampling import mixture_dataset
from kdplug_plugins.mtdnn.sampling import sampling_probabilities
from kdplug_plugins.mtdnn.summary import summary_markdown
from kdplug_plugins.mtdnn.task import Task
from kdplug_plugins.mtdnn.teacher_ensemble import TeacherEnsemble

LATENCY_RUNS = 30
SINGLE_TASK = "single_task"
MULTI_TASK = "multi_task"
MULTI_TASK_KD = "multi_task_kd"


class MultiTaskRun:
    """Runs an `mtdnn-ensemble` config end to end.

    `kdplug.train.Experiment.run` hands the run to the method (its
    `run_experiment` hook) after it has seeded, created the run folder and
    the `tf.distribute` strategy. Steps:

    1. read every task (`method.tasks`, defaults from `data:`);
    2. for each task with `teacher: true`, a `TeacherEnsemble` fine-tunes
       `ensemble_size` teachers (cached) and averages their cached outputs;
    3. train the students, each through `Experiment.run_stage` (resumable,
       checkpointed, the usual callbacks): one single-task student per task
       and a multi-task student on gold labels (the `baselines`), then the
       multi-task student with ensemble distillation. Students start from
       the configured student kind built from the *pretrained* teacher (not
       a fine-tuned member), so every variant starts from the same weights;
    4. evaluate every variant and the ensembles per task on the test split;
       save the distilled student as `student.keras`; write
       `metrics.json`, `summary.md` and `loss_curves.png`.

    Args:
        method: the configured `MTDNNEnsembleMethod`.
        experiment: the `kdplug.train.Experiment` driving the run.

    Examples:

    ```python
    report = MultiTaskRun(method, experiment).run()
    report["variants"]["multi_task_kd"]["movie_sentiment"]["accuracy"]
    ```
    """

    def __init__(self, method, experiment):
        self.method = method
        self.experiment = experiment
        self.config = experiment.config
        self.log = experiment.log
        self.seconds = experiment.seconds

    def run(self):
        cfg, exp = self.config, self.experiment
        mcfg = self.method.config
        start = time.perf_counter()
        self.tasks = [Task.read(t, cfg) for t in mcfg.tasks]
        self.seconds["reading data"] = time.perf_counter() - start
        variants = self._variants()
        check_schedules(cfg.training.schedules, [
            kdplug.Stage(name, self.method.terms([t.spec() for t in tasks], kd))
            for name, tasks, kd in variants
        ], cfg.file)
        base, encoder = self._base_model()
        self.encoder = encoder
        exp.tokenizer = encoder.tokenizer  # Experiment.run_stage reads it
        ensembles = self._ensembles()
        self.targets = {name: e["train_targets"] for name, e in ensembles.items()}
        history, results, students = {}, {}, {}
        for index, (name, tasks, kd) in enumerate(variants):
            student, hist = self._train(index, name, tasks, kd, base)
            history[name] = hist
            start = time.perf_counter()
            results[name] = {t.name: self._evaluate(student, i, t)
                             for i, t in enumerate(tasks)}
            self.seconds[f"evaluation {name}"] = time.perf_counter() - start
            students[name] = student
        return self._report(ensembles, history, results, students[MULTI_TASK_KD])

    # ------------------------------------------------------------- pieces
    def _base_model(self):
        """The pretrained teacher (students are cut from it) and the encoder."""
        cfg = self.config
        with self.experiment.strategy.scope():
            base, tokenizer, _ = load_teacher(cfg.teacher, 2, cfg.resolve_path)
        max_len = base.backbone.max_sequence_length
        if cfg.data.sequence_length > max_len:
            raise ConfigError(
                f"above the teacher's maximum sequence length {max_len}",
                cfg.file, "data.sequence_length", cfg.data.sequence_length,
            )
        if tokenizer.vocabulary_size() != base.backbone.vocabulary_size:
            raise ConfigError(
                f"tokenizer has {tokenizer.vocabulary_size()} tokens but the "
                f"teacher's embedding has {base.backbone.vocabulary_size}",
                cfg.file, "teacher.tokenizer", cfg.teacher.tokenizer,
            )
        return base, TextEncoder(tokenizer, cfg.data.sequence_length)

    def _ensembles(self):
        mcfg = self.method.config
        out = {}
        for task in self.tasks:
            if not task.teacher:
                continue
            start = time.perf_counter()
            out[task.name] = TeacherEnsemble(
                self.config, task, self.encoder, mcfg.ensemble_size,
                mcfg.temperature, self.experiment.strategy, self.log,
            ).run()
            self.seconds[f"teachers {task.name}"] = time.perf_counter() - start
        return out

    def _variants(self):
        """`[(name, tasks, kd)]` in training order, the distilled one last."""
        baselines = self.method.config.baselines
        variants = []
        if SINGLE_TASK in baselines:
            variants += [(f"{SINGLE_TASK}-{t.name}", [t], False) for t in self.tasks]
        if MULTI_TASK in baselines:
            variants.append((MULTI_TASK, self.tasks, False))
        variants.append((MULTI_TASK_KD, self.tasks, True))
        return variants

    def _train(self, index, name, tasks, kd, base):
        cfg, exp = self.config, self.experiment
        keras.utils.set_random_seed(cfg.seed)  # every variant starts alike
        kind = exp.pm.students.get(cfg.student.name)(cfg.student_config)
        specs = [t.spec() for t in tasks]
        with exp.strategy.scope():
            student = MultiTaskStudent(
                kind.build(base, 2), specs, dropout=self.method.config.head_dropout,
                name=f"student_{name.replace('-', '_')}",
            )
            terms = self.method.terms(specs, distill=kd)
        stage = kdplug.Stage(name, terms)
        train_ds = self.dataset(tasks, "train", kd, shuffle=True)
        val_ds = self.dataset(tasks, "validation", kd, shuffle=False)
        hist = exp.run_stage(index, stage, student, None, train_ds, val_ds, metrics=())
        return student, hist

    def dataset(self, tasks, split, kd, shuffle):
        """Batches of `split` drawn across `tasks`, one task per batch.

        Features: the tokenised text, `task` (the index into `tasks`, i.e.
        the student's head) and, for distillation, `teacher/targets` (the
        averaged soft targets, zero-padded to the widest head) and
        `teacher/present` (1 where the task has a teacher; only on the
        training split). Labels are float32 (class ids or targets).
        Training batches follow `method.sampling`; validation visits every
        batch once. None when the split is absent.
        """
        mcfg = self.method.config
        if any(t.splits.get(split) is None for t in tasks):
            return None
        batch_size = self.config.training.batch_size
        width = max(t.num_outputs for t in tasks)
        datasets, sizes = [], []
        for index, task in enumerate(tasks):
            examples = task.splits[split]
            n = len(examples)
            extra = {"task": np.full(n, index, "int32")}
            if kd:
                targets = np.zeros((n, width), "float32")
                present = np.zeros(n, "float32")
                if split == "train" and task.name in self.targets:
                    targets[:, : task.num_outputs] = self.targets[task.name]
                    present[:] = 1.0
                extra["teacher/targets"] = targets
                extra["teacher/present"] = present
            examples = Examples(examples.texts, examples.labels.astype("float32"),
                                examples.pairs, examples.source)
            datasets.append(self.encoder.dataset(
                examples, batch_size, shuffle=shuffle,
                seed=self.config.seed + index, extra=extra,
            ))
            sizes.append(n)
        mode = mcfg.sampling if split == "train" else "proportional"
        return mixture_dataset(datasets, sizes, batch_size, mode,
                               mcfg.sampling_temperature, seed=self.config.seed)

    def _evaluate(self, student, index, task):
        ds = self.encoder.dataset(task.splits["test"], 64)
        outputs, labels = predict_outputs(student, ds, tap=f"logits/{task.name}")
        return task_metrics(task.type, outputs, labels)

    # ------------------------------------------------------------- report
    def _report(self, ensembles, history, results, student):
        cfg, mcfg = self.config, self.method.config
        sizes = [len(t.train) for t in self.tasks]
        probs = sampling_probabilities(sizes, mcfg.sampling, mcfg.sampling_temperature)
        distilled = results[MULTI_TASK_KD]
        x = first_examples(self.encoder.dataset(self.tasks[0].splits["test"], 1), 1)
        student_latency = latency_ms(
            lambda inputs, training=False: student.taps(inputs, ["logits"])["logits"],
            x, runs=LATENCY_RUNS,
        )
        report = {
            "name": cfg.name,
            "method": cfg.method.name,
            "data": cfg.data.path,
            "tasks": {
                t.name: {
                    "type": t.type,
                    "metric": PRIMARY[t.type],
                    "path": t.data.path,
                    "label_column": t.data.label_column,
                    "teacher": t.teacher,
                    "train_examples": len(t.train),
                    "test_examples": len(t.splits["test"]),
                    "sampling_probability": float(p),
                }
                for t, p in zip(self.tasks, probs)
            },
            "sampling": {"mode": mcfg.sampling,
                         "temperature": mcfg.sampling_temperature},
            "ensemble_size": mcfg.ensemble_size,
            "teacher": {
                # `accuracy`: mean over classification tasks with a teacher
                # (what `kdplug run` prints); per-task numbers are below.
                "accuracy": _mean_accuracy(
                    {n: e["test_metrics"] for n, e in ensembles.items()},
                    self.tasks),
                "params_per_member": next(
                    (e["params"] for e in ensembles.values()), None),
                "tasks": {n: {k: v for k, v in e.items()
                              if k not in ("train_targets", "test_targets")}
                          for n, e in ensembles.items()},
            },
            "student": {
                "accuracy": _mean_accuracy(distilled, self.tasks),
                "params": count_params(student),
                "latency_ms": student_latency,
                "tasks": distilled,
            },
            "variants": results,
            "history": history,
            "latency_runs": LATENCY_RUNS,
            "seconds": dict(self.seconds),
        }
        if cfg.export:
            report["export"] = {"notes": [
                "multi-task students are saved as student.keras only "
                "(export formats measure single-output classifiers)"]}
        if is_chief(self.experiment.strategy):
            run_dir = self.experiment.run_dir
            student.save(os.path.join(run_dir, "student.keras"))
            report["plots"] = {"loss_curves": plots.loss_curves(
                history, os.path.join(run_dir, plots.LOSS_CURVES))}
            with open(os.path.join(run_dir, "metrics.json"), "w") as f:
                json.dump(report, f, indent=2, default=float)
            with open(os.path.join(run_dir, "summary.md"), "w") as f:
                f.write(summary_markdown(report))
            self.log(f"report: {os.path.join(run_dir, 'summary.md')}")
        return report


def _mean_accuracy(per_task, tasks):
    values = [per_task[t.name]["accuracy"] for t in tasks
              if t.name in per_task and t.type == "classification"]
    return float(np.mean(values)) if values else math.nan
