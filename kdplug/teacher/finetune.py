"""Fine-tuning a teacher on the task, cached on disk by content."""

import functools
import logging
import os
import shutil
import time

import numpy as np

from kdplug import storage
from kdplug.data.length_buckets import dataset_by_length
from kdplug.data.readers import source_fingerprints
from kdplug.errors import ConfigError
from kdplug.errors import TrainingError
from kdplug.storage import cache_root
from kdplug.storage import fingerprint
from kdplug.storage import fingerprint_path
from kdplug.teacher.cache_admin import TEACHER_INFO as INFO
from kdplug.teacher.cache_admin import TEACHER_TRAINED as TRAINED
from kdplug.teacher.cache_admin import TEACHER_WEIGHTS as WEIGHTS

# While fine-tuning, beside the weights: the epoch backup and early
# stopping's state, both removed once the weights are cached.
BACKUP = "backup"
EARLY_STOPPING = "early_stopping"
from kdplug.teacher.objectives import ClassificationObjective
from kdplug.teacher.pooling import pooling_key
from kdplug.training.build_state import build_training_state
from kdplug.training.callbacks.keep_best_epoch import KeepBestEpoch
from kdplug.training.callbacks.progress_line import keras_verbosity
from kdplug.training.callbacks.progress_line import progress_lines
from kdplug.training.callbacks.resumable_backup import ResumableBackup
from kdplug.training.callbacks.validation_metrics import ValidationMetrics
from kdplug.training.callbacks.stop_on_nan import StopOnNaN
from kdplug.training.distribution import resolve_mixed_precision
from kdplug.training.optimizers import make_optimizer

log = logging.getLogger(__name__)


def all_finite(model):
    """Whether every weight of `model` is finite."""
    return all(np.isfinite(np.asarray(w)).all() for w in model.get_weights())


def _classification(config):
    """`ClassificationObjective`, the objective of a classification config
    only: another task kind's teacher is cached under its own objective's
    key, which its caller passes."""
    if config.task != ClassificationObjective.name:
        raise ValueError(f"a {config.task!r} teacher is fine-tuned with its task's "
                         "objective: pass kdplug.tasks.task_objective(config)")
    return ClassificationObjective()


class TeacherFinetuner:
    """Fine-tunes a teacher once; later runs load the cached weights.

    The cache key hashes the teacher's source files, the data's content (not
    the path naming it), the data and fine-tuning settings, the seed, the
    objective and `training.length_buckets` when set (the fine-tuning's
    batches are then length-bucketed: `TeacherSetup.finetune`), so any
    change retrains. Only weights are cached, under
    `$KDPLUG_CACHE_DIR/teachers/<key>/` (`model.weights.h5` and `info.json`,
    the fine-tuning report, written last). The weights are written before
    the dev split is evaluated for the report, with the fine-tuning's
    history (`trained.json`): a run killed during that evaluation keeps
    them, and the next run evaluates them instead of fine-tuning again.

    Args:
        config: the `ExperimentConfig` (for a multi-task member: its `data`
            is the task's, its `seed` the member's).
        source: the resolved teacher source (folder, file or preset).
        objective: see `kdplug.teacher.objectives`; the task kind's
            (`kdplug.tasks.task_objective(config)`, what a run passes).
            None: `ClassificationObjective`, for a classification config
            only (another kind's teacher would be cached under another
            objective's key).
        data_fingerprint: the content fingerprint of in-memory data
            (`RunContext.data_fingerprint`), which stands for the data
            file's in the key; None: the config's data sources.

    Examples:

    ```python
    finetuner = TeacherFinetuner(config, source)
    info = finetuner.run(teacher, train_ds, val_ds)
    ```
    """

    def __init__(self, config, source, objective=None, data_fingerprint=None):
        self.config = config
        self.data_fingerprint = data_fingerprint
        self.source = source
        self.objective = objective or _classification(config)
        ft = config.teacher.finetune
        root = ft.cache_dir and config.resolve_path(ft.cache_dir) or cache_root()
        self.cache_dir = os.path.join(root, "teachers", self.key())
        if not os.path.exists(self.cache_dir):
            legacy = os.path.join(root, "teachers", self.key(legacy=True))
            if os.path.isfile(os.path.join(legacy, INFO)):
                # fine-tuned by kdplug before 2026-11-27: used where it is
                log.info("teacher: the cache entry %s has the key of an older "
                         "kdplug (the data named by the path as written)", legacy)
                self.cache_dir = legacy

    @functools.cached_property
    def _content(self):
        """`(teacher files, data)` fingerprints, read once for both keys."""
        cfg = self.config
        return (fingerprint_path(self.source), self.data_fingerprint
                or source_fingerprints(cfg.data, cfg.resolve_path))

    def key(self, legacy=False):
        """The cache key (16 hex digits). The data counts by its content
        (`source_fingerprints`), never by the path that names it, so
        configs in other folders naming the same file share the teacher;
        `legacy=True`: the key of kdplug before 2026-11-27, which also hashed
        the data's paths as written (entries under it are still loaded)."""
        cfg = self.config
        teacher_files, data_content = self._content
        buckets = cfg.training.length_buckets
        precision = resolve_mixed_precision(cfg.training.mixed_precision)
        data_config = cfg.data.key_fields()
        if not legacy:  # `data` is what the sources hold, not where they are
            for field in ("path", *cfg.data.SPLIT_FILES):
                data_config.pop(field, None)
        ft = dict(vars(cfg.teacher.finetune))
        ft.pop("cache_dir")
        seed = ft.pop("seed")
        if ft["early_stopping"] is None:  # keys from before the option stay valid
            ft.pop("early_stopping")
        else:
            ft["early_stopping"] = vars(ft["early_stopping"])
        return self.objective.key(fingerprint({
            "teacher": teacher_files,
            "dropout": cfg.teacher.dropout,
            "data": data_content,
            "data_config": data_config,
            "finetune": ft,
            "seed": cfg.seed if seed is None else seed,
            # kdplug 0.1 took the first max_train_examples rows
            **({"subsample": "stratified"} if cfg.data.max_train_examples else {}),
            # batches of similar lengths make other batches (keys without stay)
            **({"length_buckets": vars(buckets)} if buckets else {}),
            # fine-tuned computing in bfloat16 / float16: other weights
            **({"mixed_precision": precision} if precision else {}),
            **pooling_key(cfg.teacher, self.source),  # only when not [CLS]
        }))

    @property
    def weights_path(self):
        return self._path(WEIGHTS)

    def is_cached(self):
        """Whether `run()` will load the fine-tuned weights rather than
        fine-tune: they are in the cache with their record (`info.json`,
        or the `trained.json` of a run stopped before evaluating them)."""
        return os.path.isfile(self.weights_path) and any(
            os.path.isfile(self._path(name)) for name in (INFO, TRAINED))

    def _path(self, name):
        return os.path.join(self.cache_dir, name)

    def run(self, teacher, train_ds, val_ds, jit_compile=True, length_buckets=None):
        """Fine-tunes (or loads) `teacher` in place; returns an info dict.

        Args:
            teacher: the model, compiled here with the objective's loss.
            train_ds: the training batches (padded or length-bucketed).
            val_ds: the dev split's batches, or None.
            jit_compile: XLA-compile the fine-tuning's steps.
            length_buckets: a `kdplug.data.length_buckets.LengthBuckets`
                (`training.length_buckets`), for a padded `val_ds`: every
                pass over the dev split reads it in batches of similar
                length, each cut to its longest sentence: Keras' validation
                pass of `fit` (`val_loss`, `val_accuracy`, for early
                stopping: `dataset_by_length`; the objective's loss is a
                per-example mean, so they are the padded pass's), the
                objective's validation metrics and `info`'s dev-split
                metrics (`predict_outputs`, the outputs back in the split's
                order). None: `val_ds` as it is (padded, or already cut).

        The info holds the objective's metrics, `seconds` (the fine-tuning's
        wall time), `early_stopping` and `cached`; a fine-tuning that
        resumed a killed one from its epoch backup also holds
        `resumed_at_epoch` (the epochs finished before): its `seconds`
        are then the resuming process's part only, not the whole cost.
        """
        info = storage.read_json(self._path(INFO))
        trained = storage.read_json(self._path(TRAINED))
        if os.path.isfile(self.weights_path) and (info is not None or trained is not None):
            initial = teacher.get_weights()
            problem = None
            try:
                teacher.load_weights(self.weights_path)
            except Exception as e:  # truncated or foreign file: h5py/keras errors
                problem = f"do not load ({type(e).__name__}: {e})"
            else:
                if not all_finite(teacher):  # kdplug 0.1 cached diverged teachers
                    problem = "are not finite"
            if problem is None:
                if info is None:
                    log.info("teacher: fine-tuned weights in %s, not evaluated yet "
                             "(the run that fine-tuned them stopped): evaluating them",
                             self.cache_dir)
                    self._compile(teacher, train_ds, jit_compile)  # as evaluated after fit
                    for leftover in (BACKUP, EARLY_STOPPING):  # if killed before
                        shutil.rmtree(self._path(leftover), ignore_errors=True)
                    return dict(self._complete(teacher, val_ds, trained, length_buckets),
                                cached=True)
                log.info("teacher: loaded fine-tuned weights from %s", self.cache_dir)
                return dict(info, cached=True)
            log.warning("teacher: the cached weights in %s %s; removing them and "
                        "fine-tuning again", self.cache_dir, problem)
            shutil.rmtree(self.cache_dir, ignore_errors=True)
            teacher.set_weights(initial)
        ft = self.config.teacher.finetune
        steps = self._compile(teacher, train_ds, jit_compile)
        build_training_state(teacher, train_ds)  # the train step traced once
        best = self._early_stopping(val_ds)
        log.info("teacher: fine-tuning (%s) for %s%d epoch(s), %d steps",
                 self.objective.name, "at most " if best else "", ft.epochs, steps)
        start = time.perf_counter()
        # An interrupted fine-tuning resumes at its first unfinished epoch
        # (the backup lives in the entry's folder until the weights are
        # cached; early stopping's state beside it is written first).
        backup = ResumableBackup(self._path(BACKUP),
                                 "teacher fine-tuning", remove_at_end=False)
        # marked first: an unfinished entry lists as partial (`kdplug cache`)
        storage.mark_entry(self.cache_dir, "teacher", os.path.basename(self.cache_dir),
                           source=str(self.source))
        try:
            history = self._fit(teacher, train_ds, val_ds, best, backup, length_buckets)
        except TrainingError:  # diverged: nothing to resume from, nothing cached
            shutil.rmtree(self.cache_dir, ignore_errors=True)
            raise
        if not all_finite(teacher):  # never cache a broken teacher
            shutil.rmtree(self.cache_dir, ignore_errors=True)
            raise TrainingError(
                "teacher fine-tuning produced non-finite weights (learning rate "
                f"{ft.learning_rate:g}); lower teacher.finetune.learning_rate. "
                "Nothing was cached.")
        # The weights first, with what fit logged: a kill while the dev split
        # is evaluated (a minute for MiniLM-L6 on 2 CPU cores) keeps them.
        trained = {"seconds": time.perf_counter() - start,
                   "history": {k: [float(v) for v in values]
                               for k, values in history.history.items()},
                   "early_stopping": best.summary() if best else None}
        if backup.resumed_epoch:  # `seconds` cover the epochs after it only
            trained["resumed_at_epoch"] = backup.resumed_epoch
        storage.save_weights(teacher, self.weights_path, include_optimizer=False)
        storage.write_json(self._path(TRAINED), trained, indent=None)
        backup.remove()  # not before: a kill until now resumes at the last epoch
        if best:
            best.cleanup()
        info = self._complete(teacher, val_ds, trained, length_buckets)
        log.info("teacher: cached fine-tuned weights in %s", self.cache_dir)
        return dict(info, cached=False)

    def _compile(self, teacher, train_ds, jit_compile):
        """Compiles `teacher` for its fine-tuning; returns its steps."""
        ft = self.config.teacher.finetune
        steps = int(train_ds.cardinality()) * ft.epochs
        teacher.compile(
            optimizer=make_optimizer(
                "adamw", ft.learning_rate, steps, ft.warmup_ratio, 0.01
            ),
            loss=self.objective.loss(),
            metrics=self.objective.metrics() or None,
            # the objective's metrics only: keras-hub tasks add their own
            # by default (a `*MaskedLM`'s accuracy over every position, not
            # the masked ones, logged beside the objective's)
            weighted_metrics=None,
            jit_compile=jit_compile,
        )
        return steps

    def _complete(self, teacher, val_ds, trained, length_buckets=None):
        """Writes the entry's `info.json` (last: the entry is complete) from
        the fine-tuning's `trained.json` record and the objective's metrics
        of the fine-tuned `teacher` (read in `length_buckets` when given: an
        objective's `info` takes them as a keyword then); returns it."""
        by_length = {} if length_buckets is None else {"length_buckets": length_buckets}
        info = {"seconds": trained["seconds"],
                **self.objective.info(trained["history"], teacher, val_ds, **by_length)}
        if trained["early_stopping"] is not None:
            info["early_stopping"] = trained["early_stopping"]
        if trained.get("resumed_at_epoch"):
            info["resumed_at_epoch"] = trained["resumed_at_epoch"]
        storage.write_json(self._path(INFO), info, indent=None)
        os.remove(self._path(TRAINED))
        return info

    def _fit(self, teacher, train_ds, val_ds, best, backup, length_buckets=None):
        """`teacher.fit` for `teacher.finetune.epochs`, resumable from
        `backup` (a `ResumableBackup`; returns the History of the epochs it
        trains). With early stopping, Keras' validation pass reads `val_ds`,
        in `length_buckets` when given (`dataset_by_length`), and the
        objective's validation metrics `val_ds` by length (`_scores`)."""
        ft = self.config.teacher.finetune
        fit_val_ds = val_ds if best else None
        if fit_val_ds is not None and length_buckets is not None:
            fit_val_ds = dataset_by_length(val_ds, length_buckets)
        return teacher.fit(
            train_ds, epochs=ft.epochs,
            validation_data=fit_val_ds,
            verbose=keras_verbosity(self.config.training.verbose),
            shuffle=False,  # the dataset reshuffles itself every epoch
            callbacks=[StopOnNaN("teacher fine-tuning",
                                 learning_rate_field="teacher.finetune.learning_rate"),
                       *self._scores(best, teacher, val_ds, length_buckets),
                       *([best] if best else []),
                       backup,
                       *progress_lines("teacher fine-tuning",
                                       self.config.training.verbose)],
        )

    def _scores(self, best, teacher, val_ds, length_buckets=None):
        """`[ValidationMetrics]` logging the objective's validation metrics
        (`objective.scores()`: e.g. `val_pearson`) for early stopping to
        watch, its prediction pass in `length_buckets` when given; none
        without early stopping or such metrics."""
        names, compute = getattr(self.objective, "scores", lambda: ([], None))()
        if best is None or not names:
            return []
        return [ValidationMetrics(teacher, val_ds, names, compute=compute,
                                  length_buckets=length_buckets)]

    def _early_stopping(self, val_ds):
        """`KeepBestEpoch` for `teacher.finetune.early_stopping` (None
        without it); its files live next to the cache entry until the
        weights are cached."""
        cfg = self.config.teacher.finetune.early_stopping
        if cfg is None:
            return None
        if val_ds is None:
            raise ConfigError(
                "early stopping watches the validation split, and this run has "
                "none; set data.validation_split or data.dev (or remove "
                "teacher.finetune.early_stopping)",
                self.config.file, "teacher.finetune.early_stopping")
        return KeepBestEpoch(
            self._path(EARLY_STOPPING), cfg.monitor, maximize=cfg.maximize,
            patience=cfg.patience, min_delta=cfg.min_delta,
            stage="teacher fine-tuning", file=self.config.file,
            field="teacher.finetune.early_stopping.monitor")
