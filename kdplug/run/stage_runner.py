"""`StageRunner`: trains one `Stage` of a method, resumably."""

import os
import shutil

import keras
import numpy as np
import tensorflow as tf

from kdplug import storage
from kdplug.data.batch_mix import BatchMix
from kdplug.data.masking import needs_masking
from kdplug.data.masking import stage_dataset
from kdplug.errors import ConfigError
from kdplug.evaluation.report import resumed_text
from kdplug.run.run_folder import ways_out
from kdplug.run_files import BACKUP
from kdplug.run_files import STAGE_BEST
from kdplug.run_files import STAGE_HISTORY
from kdplug.run_files import STAGE_POINTER
from kdplug.run_files import STAGE_TERMS
from kdplug.run_files import STAGE_WEIGHTS
from kdplug.run_files import STAGES
from kdplug.run_files import TENSORBOARD
from kdplug.run_files import TENSORBOARD_STEPS
from kdplug.students.utils import force_trainable
from kdplug.tasks import get_task
from kdplug.teacher.pipeline import TeacherPipeline
from kdplug.teacher.pipeline import carries_taps
from kdplug.terms import HardLabelCrossEntropy
from kdplug.training.callbacks import KeepBestEpoch
from kdplug.training.callbacks import ResumableBackup
from kdplug.training.callbacks import RunHistory
from kdplug.training.callbacks import StageChecks
from kdplug.training.callbacks import StopOnNaN
from kdplug.training.callbacks import ValidationMetrics
from kdplug.training.callbacks.progress_line import keras_verbosity
from kdplug.training.callbacks.progress_line import progress_lines
from kdplug.training.custom_loop import CustomLoopTrainer
from kdplug.training.distiller import Distiller
from kdplug.training.distribution import fit_can_jit_compile
from kdplug.training.optimizers import make_optimizer
from kdplug.training.term_schedule import stage_schedules


class StageRunner:
    """Trains the stages of a run, one at a time, each resumable.

    A stage finished by an earlier run (its weights file exists under
    `stages/`) is not trained again: the student's weights, the terms' own
    weights and the stage's recorded history are loaded instead, but only
    when the stage was trained with the run's settings (the fingerprint
    recorded with it equals `context.settings_fingerprint`); otherwise the
    run stops with a `ConfigError`, before anything is loaded. An
    interrupted stage resumes from its last epoch backup under `backup/`.
    Training runs through `Distiller.fit` or, where Keras' `fit` cannot
    (multi-worker, XLA over several local replicas), through
    `CustomLoopTrainer`, with the same callbacks: NaN stop, history (per
    epoch and per step, TensorBoard), term schedules, progress, and any
    `kdplug_callbacks` from plugins.

    Files, for stage `k` named `name` (`tag = f"{k:02d}-{name}"`):
    `stages/<tag>.weights.h5` (the student; written last, it marks the
    stage finished; after a finished run, the last stage's file gives way to
    `stages/<tag>.weights.json` naming `student.keras`, see `point_at`),
    `stages/<tag>.terms.npz` (the terms' weights),
    `stages/<tag>.history.json`, `backup/<tag>/` while training,
    `tensorboard/<tag>/`.

    Args:
        context: the run's `RunContext`.

    Examples:

    ```python
    stages = StageRunner(context)
    history = stages.run(0, stage, student, teacher, train_ds, val_ds,
                         tokenizer=encoder.tokenizer)
    history.epochs["loss"], history.steps["step"]
    ```
    """

    def __init__(self, context):
        self.context = context

    def run(self, index, stage, student, teacher, train_ds, val_ds, tokenizer=None,
            metrics=None, last=True, fit_val_ds=None):
        """Trains (or reloads) one stage; returns its `StageHistory`.

        The steps: `_reload` a stage an earlier run finished; else
        `_prepare` the student and the stage's data, `_compile` the
        `Distiller`, gather the `_callbacks`, `_fit` and `_store` it.

        Args:
            index: the stage's position in the run (0-based; names files).
            stage: the `kdplug.Stage`.
            student, teacher: the models (teacher None when every batch
                carries the teacher's outputs).
            train_ds, val_ds: `(features, labels)` datasets (`val_ds` may be
                None).
            tokenizer: the teacher's tokenizer, for stages that mask their
                inputs (`data: unlabelled` + a masked-LM term).
            metrics: Keras metrics on the student's logits and the labels;
                None means accuracy, `()` none (e.g. multi-task students).
            last: whether this is the run's last stage (where
                `training.early_stopping` applies unless it names stages).
            fit_val_ds: the batches Keras' validation pass reads (`val_loss`,
                `val_<term>`, `val_<metric>`): the examples of `val_ds` in
                other batches, e.g. in length buckets
                (`kdplug.data.length_buckets.dataset_by_length`), whose
                per-example means are `val_ds`'s; None: `val_ds`. The
                callbacks (validation metrics, checks) read `val_ds`, and so
                does a stage that masks its inputs (its masks are drawn per
                batch).
        """
        files = StageFiles(self.context, index, stage)
        recorded = self._reload(stage, student, files)
        if recorded is not None:
            return recorded
        ctx = self.context
        cfg = ctx.config.training
        train_ds, val_ds = self._prepare(index, stage, student, train_ds, val_ds, tokenizer)
        fit_val_ds = fit_validation(stage, val_ds, fit_val_ds)
        epochs = stage.epochs or cfg.epochs
        steps = cfg.steps_per_epoch or int(train_ds.cardinality())
        custom_metrics = None if metrics is None else list(metrics)
        # `evaluation.metrics` beyond val_accuracy, for a single-task student
        scores = self._validation_metrics(student, val_ds) if metrics is None else None
        distiller = self._compile(stage, files.tag, student, teacher, metrics,
                                  steps * epochs)
        # the checks predict the student alone: the validation batches before
        # the teacher pipeline adds the teacher's taps to them
        checks = self._checks(stage, student, val_ds, scores,
                             own_metrics=custom_metrics is not None)
        train_ds, fit_val_ds = self._pipelined(distiller, teacher, train_ds, fit_val_ds)
        if checks.mix is not None:  # counts the first epoch's labels as read
            train_ds = checks.mix.tap(train_ds)
        history = RunHistory(files.step_history, every=ctx.log_every_steps,
                             log_dir=files.step_logs)
        best = self._early_stopping(stage, files, student, val_ds, last)
        callbacks = self._callbacks(stage, files, [scores, checks, history, best],
                                    steps * epochs)
        ctx.log.info("stage %s: %d epoch(s) x %d steps, terms: %s", stage.name,
                     epochs, steps, ", ".join(t.name for t in stage.terms))
        with ctx.timers(f"stage {stage.name}"):
            resumed = self._fit(distiller, train_ds, fit_val_ds, callbacks, epochs,
                                files, custom_metrics)
        if resumed:  # its seconds are the epochs after the kill's only
            ctx.timers.mark_resumed(f"stage {stage.name}", resumed_text(resumed))
        ctx.log.info("stage %s: done, %d optimizer steps", stage.name,
                     int(distiller.optimizer.iterations.numpy()))
        result = StageHistory(history.epoch_history(), history.steps,
                              settings=ctx.settings_fingerprint,
                              best=best.summary() if best is not None else None,
                              checks=checks.summary())
        if ctx.is_chief:
            self._store(stage, student, files, result, history, best)
        return result

    def _reload(self, stage, student, files):
        """The recorded `StageHistory` of a stage an earlier run finished,
        with the student's and the terms' weights loaded; None when the
        stage is not finished.

        Raises:
            ConfigError: the stage was trained with other settings.
        """
        ctx = self.context
        finished = self.finished_weights(files.index, stage)
        if finished is None:
            return None
        recorded = StageHistory.load(files.history)
        if recorded.settings != ctx.settings_fingerprint:
            raise ConfigError(
                f"stage {stage.name!r} in {ctx.run_dir} was trained with other "
                f"settings (recorded {recorded.settings or 'none'}, this run "
                f"{ctx.settings_fingerprint}); it cannot be reused. "
                + ways_out(ctx.run_dir), ctx.config.file, "output_dir")
        student.load_weights(finished)
        load_term_weights(stage.terms, files.terms)
        if ctx.is_chief:  # a kill right after the stage was stored left it
            shutil.rmtree(files.backup, ignore_errors=True)
        ctx.log.info("stage %s: already finished, loaded %s", stage.name, finished)
        return recorded

    def _prepare(self, index, stage, student, train_ds, val_ds, tokenizer):
        """The student made trainable as the stage says, and the stage's
        `(train_ds, val_ds)` (masked inputs, its data kind; see
        `stage_dataset`)."""
        force_trainable(student)  # undo a previous stage's freezing
        if stage.trainable is not None:
            stage.trainable(student)
        seed = self.context.config.seed
        train_ds = stage_dataset(train_ds, stage, tokenizer, seed=seed + index)
        if val_ds is not None:
            val_ds = stage_dataset(val_ds, stage, tokenizer, seed=seed, training=False)
        return train_ds, val_ds

    def _compile(self, stage, tag, student, teacher, metrics, total_steps):
        """The stage's `Distiller`, compiled in the strategy's scope with its
        optimizer (`total_steps` for the learning-rate schedule) and
        `metrics` (None: the task's Keras metrics)."""
        ctx = self.context
        cfg = ctx.config.training
        with ctx.strategy.scope():
            distiller = Distiller(student, teacher, stage.terms, name=f"distiller_{tag}")
            if metrics is None:  # created in the scope, like the models
                metrics = self._task().keras_metrics()
            distiller.compile(
                optimizer=make_optimizer(
                    cfg.optimizer, stage.learning_rate or cfg.learning_rate,
                    total_steps, cfg.warmup_ratio, cfg.weight_decay,
                ),
                metrics=list(metrics) or None,
                jit_compile=cfg.jit_compile,
            )
        return distiller

    def _needs_custom_loop(self):
        """Whether the stage trains in `CustomLoopTrainer`: fit() cannot
        XLA-compile a step whose replicas live on several local devices
        (keras-team/keras#19005), nor run multi-worker; the custom loop
        compiles each replica's forward and backward pass instead
        (docs/distributed.md)."""
        ctx = self.context
        multi_worker = isinstance(ctx.strategy, tf.distribute.MultiWorkerMirroredStrategy)
        return multi_worker or (
            ctx.config.training.jit_compile and not fit_can_jit_compile(ctx.strategy))

    def _callbacks(self, stage, files, own, total_steps):
        """The stage's callbacks, in the order their epoch ends must run.

        Args:
            stage: the `kdplug.Stage`.
            files: its `StageFiles`.
            own: `[scores, checks, history, best]`: `ValidationMetrics`,
                `StageChecks`, `RunHistory` and `KeepBestEpoch` (scores and
                best may be None).
            total_steps: the stage's optimizer steps (term schedules).
        """
        cfg = self.context.config.training
        scores, checks, history, best = own
        # the values ValidationMetrics logs are read by the others; at an
        # epoch's end the checks run, then the records: the history and the
        # early-stopping state are written before the backup, so a kill in
        # between resumes at an epoch they forget again; the backup also sees
        # early stopping's `stop_training` (no backup after the epoch fit
        # ends with), and a kill after it finds the next epoch started
        callbacks = [c for c in (scores, checks, history, best) if c is not None]
        if not self._needs_custom_loop():  # the custom loop checkpoints itself, last
            # removed once the stage is stored (`_store`): a kill until then
            # resumes at the last epoch
            callbacks.append(ResumableBackup(files.backup, stage.name, remove_at_end=False))
        callbacks += [StopOnNaN(stage.name, files.backup),
                      keras.callbacks.TensorBoard(files.logs)]
        callbacks.extend(progress_lines(stage.name, cfg.verbose))
        for extra in self.context.plugins.hook.kdplug_callbacks(config=self.context.config):
            callbacks.extend(extra or [])
        callbacks.extend(stage_schedules(cfg.schedules, stage, total_steps))
        return callbacks

    def _fit(self, distiller, train_ds, val_ds, callbacks, epochs, files, custom_metrics):
        """Trains the distiller: `Distiller.fit`, or `CustomLoopTrainer`
        where fit() cannot (`_needs_custom_loop`; `custom_metrics` its
        metrics, None: the compiled ones). Returns the epochs a killed run
        had finished when training resumed from its backup, else None."""
        cfg = self.context.config.training
        verbose = keras_verbosity(cfg.verbose)
        if self._needs_custom_loop():  # Keras 3 fit() cannot run this
            trainer = CustomLoopTrainer(
                distiller, strategy=self.context.strategy, jit_compile=cfg.jit_compile,
                metrics=custom_metrics,
            )
            trainer.fit(
                train_ds, validation_data=val_ds, epochs=epochs,
                steps_per_epoch=cfg.steps_per_epoch, callbacks=callbacks,
                backup_dir=files.backup, remove_backup=False, verbose=min(verbose, 1),
            )
            return trainer.resumed_epoch
        distiller.fit(
            train_ds,
            validation_data=val_ds,
            epochs=epochs,
            steps_per_epoch=cfg.steps_per_epoch,
            callbacks=callbacks,
            verbose=verbose,
            shuffle=False,  # the dataset reshuffles itself every epoch
        )
        backup = next((c for c in callbacks if isinstance(c, ResumableBackup)), None)
        return backup.resumed_epoch if backup is not None else None

    def _store(self, stage, student, files, result, history, best):
        """Stores a finished stage (its history, terms, then the student's
        weights, written last: they mark it finished) and removes what
        resuming it needed."""
        result.save(files.history)
        save_term_weights(stage.terms, files.terms)
        storage.save_weights(student, files.weights)  # written last: marks it finished
        shutil.rmtree(files.backup, ignore_errors=True)  # not needed from here on
        if os.path.exists(history.path):
            os.remove(history.path)
        if best is not None:
            best.cleanup()

    def finished_weights(self, index, stage):
        """The student's weights after stage `index` of an earlier run: its
        `stages/<tag>.weights.h5`, or the file its `stages/<tag>.weights.json`
        points at (`point_at`); None when the stage is not finished, or when
        that file is gone or cannot be read whole (a `student.keras` cut
        short): the stage is then trained again, with a warning."""
        files = StageFiles(self.context, index, stage)
        pointer = storage.read_json(files.pointer)
        if os.path.isfile(files.weights):
            target = files.weights
        elif pointer is None:
            return None
        else:
            target = self.context.path(pointer["file"])
        why = "gone" if not os.path.isfile(target) else storage.unreadable(target)
        if why is None:
            return target
        self.context.log.warning(
            "stage %s: its weights were %s, which is %s; training it again",
            stage.name, target, why if why == "gone" else f"damaged ({why})")
        return None

    def point_at(self, index, stage, saved):
        """Stores the finished stage `index` once: its weights file gives way
        to `stages/<tag>.weights.json` naming `saved` (the run's
        `student.keras`, holding the same weights), so a finished run keeps
        one copy of the student. A re-run loads the stage from `saved`.

        Args:
            index, stage: as for `run`.
            saved: a file in the run folder that `student.load_weights`
                reads (e.g. `<run>/student.keras`).
        """
        files = StageFiles(self.context, index, stage)
        if not self.context.is_chief or not os.path.isfile(files.weights):
            return
        relative = os.path.relpath(saved, self.context.run_dir)
        # the pointer first: a crash in between leaves both, never neither
        storage.write_json(files.pointer, {"file": relative, "weights_of": stage.name})
        os.remove(files.weights)

    def _early_stopping(self, stage, files, student, val_ds, last):
        """`KeepBestEpoch` for a stage `training.early_stopping` covers (its
        `stages`, default the last one), else None."""
        ctx = self.context
        cfg = ctx.config.training.early_stopping
        if cfg is None or (stage.name not in cfg.stages if cfg.stages else not last):
            return None
        if val_ds is None:
            raise ConfigError(
                "early stopping watches the validation split, and this run has "
                "none; set data.validation_split (or remove training.early_stopping)",
                ctx.config.file, "training.early_stopping")
        return KeepBestEpoch(
            files.best, cfg.monitor, maximize=cfg.maximize,
            patience=cfg.patience, min_delta=cfg.min_delta, model=student,
            stage=stage.name, file=ctx.config.file)

    def _task(self):
        """The run's `kdplug.tasks.Task` (classification for a method's own
        task kind, e.g. seq2seq, whose runner passes its own metrics)."""
        return self.context.task or get_task("classification")

    def _validation_metrics(self, student, val_ds):
        """`ValidationMetrics` for the task's metrics (its primary one and
        `evaluation.metrics`) that are not compiled Keras metrics, or None
        (none left, or no validation split)."""
        task = self._task()
        names = [name for name in task.metric_names(self.context.config.evaluation)
                 if name not in task.compiled_metrics]
        if not names or val_ds is None:
            return None
        return ValidationMetrics(student, val_ds, names, compute=task.metrics,
                                 length_buckets=self.context.length_buckets())

    def _checks(self, stage, student, val_ds, scores, own_metrics):
        """`StageChecks` for a stage: the label mix of its training batches
        and, when it trains the student's prediction layer, whether the
        student collapses to one answer. A runner with metrics of its own
        (multi-task, seq2seq: `own_metrics`) reads other labels: neither is
        checked there."""
        if own_metrics:
            return StageChecks(stage.name, BatchMix.for_task(None))
        task = self._task()
        trains_head = any("logits" in term.required_student_taps()
                          for term in stage.terms)
        classes = self.context.config.data.num_classes
        plateau = {term.name: classes for term in stage.terms
                   if isinstance(term, HardLabelCrossEntropy) and classes}
        return StageChecks(
            stage.name, BatchMix.for_task(task), student if trains_head else None,
            val_ds, task.label_kind, plateau,
            predictions=None if scores is None else scores.predictions,
            length_buckets=self.context.length_buckets())

    def _pipelined(self, distiller, teacher, train_ds, val_ds):
        """`teacher.pipeline:`: the online teacher's taps computed in the
        input pipeline (`TeacherPipeline`), not in the train step."""
        cfg = self.context.config.teacher.pipeline
        names = distiller.teacher_tap_names
        if cfg is None or teacher is None or not names or carries_taps(train_ds, names):
            return train_ds, val_ds
        pipeline = TeacherPipeline(teacher, names, dtype=cfg.dtype,
                                   trim_padding=cfg.trim_padding,
                                   length_chunks=cfg.length_chunks,
                                   jit_compile=cfg.jit_compile)
        self.context.log.info(
            "teacher pipeline: %s teacher in the input pipeline%s%s%s",
            pipeline.dtype, ", XLA" if pipeline.jit_compile else "",
            ", padding trimmed" if pipeline.trim_padding else "",
            f" in {pipeline.length_chunks} length-sorted chunks"
            if pipeline.length_chunks > 1 else "")
        return pipeline(train_ds), None if val_ds is None else pipeline(val_ds)


class StageHistory:
    """What a stage logged: `epochs` (`{key: [value per epoch]}`, like Keras'
    `History.history`) and `steps` (`{"step": [...], "epoch": [...], key:
    [...]}`, every `log_every_steps` optimizer steps), and the fingerprint of
    the settings that trained it (`settings`), with early stopping the
    best epoch (`best`: `KeepBestEpoch.summary()`), and what `StageChecks`
    found (`checks`: the first epoch's label mix, the collapse check of
    every epoch).

    Examples:

    ```python
    history = StageHistory.load("runs/x/stages/01-distill.history.json")
    history.epochs["val_loss"][-1]
    ```
    """

    def __init__(self, epochs=None, steps=None, settings=None, best=None, checks=None):
        self.epochs = dict(epochs or {})
        self.steps = dict(steps or {})
        self.settings = settings
        self.best = best
        self.checks = checks

    @classmethod
    def load(cls, path):
        """The history recorded with a finished stage (empty, with no
        settings, when there is none: a stage finished by kdplug 0.1)."""
        data = storage.read_json(path) or {}
        return cls(data.get("epochs"), data.get("steps"), data.get("settings"),
                   data.get("best"), data.get("checks"))

    def save(self, path):
        storage.write_json(path, {"settings": self.settings, "epochs": self.epochs,
                                  "steps": self.steps, "best": self.best,
                                  "checks": self.checks})


class StageFiles:
    """The files of stage `index` in a run folder (`kdplug.run_files`:
    `STAGE_*` under `stages/` and `backup/`, its logs under
    `tensorboard/`).

    Args:
        context: the run's `RunContext`.
        index: the stage's position in the run (0-based).
        stage: the `kdplug.Stage`.

    Examples:

    >>> from types import SimpleNamespace
    >>> context = SimpleNamespace(path=lambda *parts: "/".join(("run", *parts)))
    >>> files = StageFiles(context, 0, SimpleNamespace(name="distill"))
    >>> files.weights, files.backup, files.step_logs
    ('run/stages/01-distill.weights.h5', 'run/backup/01-distill', 'run/tensorboard/01-distill/steps')
    """

    def __init__(self, context, index, stage):
        self.index = index
        self.tag = tag = stage_tag(index, stage)
        # the finished stage: the student (or the pointer to the file that
        # holds its weights, `point_at`), its history, the terms' weights
        self.weights = context.path(STAGES, STAGE_WEIGHTS.format(tag=tag))
        self.pointer = context.path(STAGES, STAGE_POINTER.format(tag=tag))
        self.history = context.path(STAGES, STAGE_HISTORY.format(tag=tag))
        self.terms = context.path(STAGES, STAGE_TERMS.format(tag=tag))
        # while it trains: the epoch backup, the step history, the best epoch
        self.backup = context.path(BACKUP, tag)
        self.step_history = context.path(BACKUP, STAGE_HISTORY.format(tag=tag))
        self.best = context.path(BACKUP, STAGE_BEST.format(tag=tag))
        self.logs = context.path(TENSORBOARD, tag)
        self.step_logs = context.path(TENSORBOARD, tag, TENSORBOARD_STEPS)


def fit_validation(stage, val_ds, fit_val_ds):
    """What Keras' validation pass of `stage` reads: `fit_val_ds` (e.g.
    `val_ds`'s examples in length buckets, `dataset_by_length`), or the
    stage's `val_ds` (as `_prepare` made it) when there is none, or when
    the stage masks its inputs: its validation masks are drawn per batch
    (`kdplug.data.masking.apply_masking`), so other batches would draw
    other masks, and `val_loss` would not be the padded batches'."""
    if fit_val_ds is None or val_ds is None or needs_masking(stage.terms):
        return val_ds
    return fit_val_ds


def stage_tag(index, stage):
    """`"01-distill"`: stage `index` (0-based) named as its files are."""
    return f"{index + 1:02d}-{stage.name}"


def save_term_weights(terms, path):
    """Saves the terms' own weights (projections, heads, schedulable
    scalars) so a later stage that shares them resumes with trained values."""
    storage.write_npz(path, {
        f"{term.name}/{i}": value
        for term in terms
        for i, value in enumerate(term.get_weights())
    })


def load_term_weights(terms, path):
    if not os.path.isfile(path):
        return
    with np.load(path) as arrays:
        for term in terms:
            values = [arrays[f"{term.name}/{i}"] for i in range(len(term.weights))]
            term.set_weights(values)
