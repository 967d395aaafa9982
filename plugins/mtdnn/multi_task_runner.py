import math
import os

import keras
import numpy as np

import kdplug
from kdplug import keys
from kdplug.data import Examples
from kdplug.errors import ConfigError
from kdplug.evaluation import LOSS_CURVES
from kdplug.evaluation import count_params
from kdplug.evaluation import first_examples
from kdplug.evaluation import latency_ms
from kdplug.evaluation import loss_curves
from kdplug.evaluation import predict_outputs
from kdplug.evaluation import task_metrics
from kdplug.models import KeyedInputs
from kdplug.plugin import PretrainedWeights
from kdplug.run import EVAL_BATCH_SIZE
from kdplug.run import Runner
from kdplug.run import StageRunner
from kdplug.run import TeacherSetup
from kdplug.run import checked_student
from kdplug.run import random_state_kept
from kdplug.run import stage_lines
from kdplug.tasks import get_task
from kdplug.training import check_early_stopping
from kdplug.training import check_schedules
from kdplug_plugins.mtdnn.multi_task_student import MultiTaskStudent
from kdplug_plugins.mtdnn.sampling import mixture_dataset
from kdplug_plugins.mtdnn.sampling import sampling_probabilities
from kdplug_plugins.mtdnn.summary import summary_markdown
from kdplug_plugins.mtdnn.task import Task
from kdplug_plugins.mtdnn.teacher_ensemble import TeacherEnsemble

SINGLE_TASK = "single_task"
MULTI_TASK = "multi_task"
MULTI_TASK_KD = "multi_task_kd"


class MultiTaskRunner(Runner):
    """Runs an `mtdnn-ensemble` config end to end (`MTDNNEnsembleMethod.runner`).

    Built on the shared pieces: the core reader (class ids or float targets
    per task), `TeacherSetup` (teachers loaded, checked and fine-tuned with
    the task's objective, cached), the teacher-output cache, `StageRunner`
    (resumable stages, the usual callbacks) and the report writer. Steps:

    1. read every task (`method.tasks`, defaults from `data:`);
    2. for each task with `teacher: true`, a `TeacherEnsemble` fine-tunes
       `ensemble_size` teachers (cached) and averages their cached outputs;
    3. train the students, each one stage of `StageRunner`: one single-task
       student per task and a multi-task student on gold labels (the
       `baselines`), then the multi-task student with ensemble distillation.
       Students start from the configured student kind built from the
       *pretrained* teacher (not a fine-tuned member), so every variant
       starts from the same weights;
    4. evaluate every variant and the ensembles per task on the test split;
       save the distilled student as `student.keras`; write `metrics.json`,
       `summary.md` and `loss_curves.png`.

    Args:
        method: the configured `MTDNNEnsembleMethod`.
        context: the run's `kdplug.run.RunContext`.

    Examples:

    ```python
    report = MultiTaskRunner(method, context).run()
    report["variants"]["multi_task_kd"]["movie_sentiment"]["accuracy"]
    ```
    """

    def run(self):
        ctx, cfg = self.context, self.context.config
        with ctx.timers("reading data"):
            self.tasks = [Task.read(t, cfg) for t in self.method.config.tasks]
        variants = self._variants()
        setup = TeacherSetup(ctx)
        base, tokenizer, _ = setup.load(2)  # students are cut from it
        self.check_students(base, variants)  # before any teacher is fine-tuned
        self.encoder = setup.encoder(tokenizer)
        ensembles = self._ensembles()
        self.targets = {name: e["train_targets"] for name, e in ensembles.items()}
        stages = StageRunner(ctx)
        history, step_history, results, students = {}, {}, {}, {}
        early_stopping = {}
        for index, (name, tasks, kd) in enumerate(variants):
            student, hist = self._train(stages, index, name, tasks, kd, base)
            history[name], step_history[name] = hist.epochs, hist.steps
            if hist.best:  # `training.early_stopping`: every variant
                early_stopping[name] = hist.best
            with ctx.timers(f"evaluation {name}"):
                results[name] = {t.name: self._evaluate(student, t) for t in tasks}
            students[name] = student
        report = self._report(ensembles, history, results, students[MULTI_TASK_KD])
        report["step_history"] = step_history
        report["early_stopping"] = early_stopping
        return self.write_run_report(report, students[MULTI_TASK_KD],
                                     summary=summary_markdown, plot=_loss_curves)

    def finetune_teacher(self):
        """Fine-tunes (or loads) every ensemble member of every task."""
        self.tasks = [Task.read(t, self.context.config) for t in self.method.config.tasks]
        setup = TeacherSetup(self.context)
        self.encoder = setup.encoder(setup.load(2)[1])
        return {name: e["members"] for name, e in self._ensembles().items()}

    def check_build(self):
        """`kdplug validate --build`: every task read, the teacher loaded,
        and `check_students` on it."""
        self.tasks = [Task.read(t, self.context.config) for t in self.method.config.tasks]
        return self.check_students(TeacherSetup(self.context).load(2)[0])

    def check_students(self, base, variants=None):
        """Builds the student on `base` (the teacher as loaded) and every
        variant's stage, and drops them: what `run()` checks before it
        fine-tunes any teacher (and `kdplug validate --build`). The student
        kind builds on this teacher (its own checks: a layer the teacher
        lacks), its maximum sequence length covers `data.sequence_length`,
        it reads the teacher's tokens, and `training.schedules` and
        `training.early_stopping` name real variants and terms. Returns one
        line per variant (`stage_lines`)."""
        cfg = self.context.config
        stages = [kdplug.Stage(name, self.method.terms([t.spec() for t in tasks], kd))
                  for name, tasks, kd in variants or self._variants()]
        check_schedules(cfg.training.schedules, stages, cfg.file)
        check_early_stopping(cfg.training.early_stopping, stages, cfg.file)
        with random_state_kept(), self.context.strategy.scope():
            self._student(MULTI_TASK_KD, self.tasks, base)
        return stage_lines(stages)

    # ------------------------------------------------------------- pieces
    def _ensembles(self):
        mcfg = self.method.config
        out = {}
        for task in self.tasks:
            if not task.teacher:
                continue
            with self.context.timers(f"teachers {task.name}"):
                out[task.name] = TeacherEnsemble(
                    self.context, task, self.encoder, mcfg.ensemble_size,
                    mcfg.temperature).run()
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

    def _train(self, stages, index, name, tasks, kd, base):
        ctx = self.context
        keras.utils.set_random_seed(ctx.config.seed)  # every variant starts alike
        with ctx.strategy.scope():
            student = self._student(name, tasks, base)
            terms = self.method.terms(student.tasks, distill=kd)
        stage = kdplug.Stage(name, terms)
        train_ds = self.dataset(tasks, "train", kd, shuffle=True)
        val_ds = self.dataset(tasks, "validation", kd, shuffle=False)
        hist = stages.run(index, stage, student, None, train_ds, val_ds, metrics=())
        return student, hist

    def _student(self, name, tasks, base):
        """The variant `name`'s `MultiTaskStudent`: a head per task of
        `tasks` on the configured student kind cut from `base`, checked
        (`checked_student`)."""
        cfg = self.context.config
        kind = self.context.student_kind()
        if kind.needs_pretrained_weights:  # `base` is never fine-tuned
            kind.pretrained_weights = PretrainedWeights(base)
        encoder = checked_student(lambda: kind.build(base, 2), cfg)
        if isinstance(encoder, KeyedInputs):
            raise ConfigError(
                "mtdnn-ensemble's batches carry the teacher's tokens, and this "
                "student encodes the text with its own tokenizer; choose one that "
                "reads the teacher's: truncated, narrow or bottleneck",
                cfg.file, "student.kind", cfg.student.name)
        return MultiTaskStudent(encoder, [t.spec() for t in tasks],
                                dropout=self.method.config.head_dropout,
                                name=f"student_{name.replace('-', '_')}")

    def dataset(self, tasks, split, kd, shuffle):
        """Batches of `split` drawn across `tasks`, one task per batch.

        Features: the tokenised text, `task` (the index into `tasks`, i.e.
        the student's head) and, for distillation, `teacher/targets` (the
        averaged soft targets, zero-padded to the widest head) and
        `teacher/present` (1 where the task has a teacher; only on the
        training split). Labels are float32 (class ids or targets).
        Training batches follow `method.sampling`; validation visits every
        batch once. With `training.length_buckets`, each task's training
        batches are grouped by length and cut to their longest sentence
        (`kdplug.data.length_buckets.LengthBuckets`) before the tasks are
        mixed; validation stays padded. None when the split is absent.
        """
        mcfg = self.method.config
        if any(t.splits.get(split) is None for t in tasks):
            return None
        cfg = self.context.config
        batch_size = cfg.training.batch_size
        width = max(t.num_outputs for t in tasks)
        buckets = self.context.length_buckets() if split == "train" else None
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
                extra[keys.teacher_key("targets")] = targets
                extra[keys.teacher_key("present")] = present
            examples = Examples(examples.texts, examples.labels.astype("float32"),
                                examples.pairs, examples.source)
            datasets.append(self.encoder.dataset(
                examples, batch_size, shuffle=shuffle,
                seed=cfg.seed + index, extra=extra, length_buckets=buckets,
            ))
            sizes.append(n)
        mode = mcfg.sampling if split == "train" else "proportional"
        return mixture_dataset(datasets, sizes, batch_size, mode,
                               mcfg.sampling_temperature, seed=cfg.seed)

    def _evaluate(self, student, task):
        ds = self.encoder.dataset(task.splits["test"], EVAL_BATCH_SIZE)
        outputs, labels = predict_outputs(student, ds, tap=f"logits/{task.name}")
        return task_metrics(task.type, outputs, labels,
                            self.context.config.evaluation.for_kind(task.type))

    # ------------------------------------------------------------- report
    def _report(self, ensembles, history, results, student):
        cfg, mcfg = self.context.config, self.method.config
        sizes = [len(t.train) for t in self.tasks]
        probs = sampling_probabilities(sizes, mcfg.sampling, mcfg.sampling_temperature)
        distilled = results[MULTI_TASK_KD]
        x = first_examples(self.encoder.dataset(self.tasks[0].splits["test"], 1), 1)
        student_latency = latency_ms(student, x, runs=cfg.evaluation.latency_runs,
                                     tap="logits")
        report = {
            "name": cfg.name,
            "method": cfg.method.name,
            "data": cfg.data.path,
            "tasks": {
                t.name: {
                    "type": t.type,
                    "metric": get_task(t.type).primary,
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
            "latency_runs": cfg.evaluation.latency_runs,
            "seconds": dict(self.context.timers.seconds),
            "resumed": dict(self.context.timers.resumed),
        }
        if cfg.export:
            report["export"] = {"notes": [
                "multi-task students are saved as student.keras only "
                "(export formats measure single-output classifiers)"]}
        return report


def _mean_accuracy(per_task, tasks):
    values = [per_task[t.name]["accuracy"] for t in tasks
              if t.name in per_task and t.type == "classification"]
    return float(np.mean(values)) if values else math.nan


def _loss_curves(run_dir, report):
    """The multi-task report's plots: the loss curves of every student."""
    return {"loss_curves": loss_curves(
        report["history"], os.path.join(run_dir, LOSS_CURVES),
        steps=report.get("step_history"))}
