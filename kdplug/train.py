"""Running an experiment: teacher, student, stages, evaluation, report."""

import os
import time

import keras
import numpy as np
import tensorflow as tf
import yaml

from kdplug.cache import TeacherCache
from kdplug.callbacks import ResumableBackup
from kdplug.callbacks import StopOnNaN
from kdplug.data import TextEncoder
from kdplug.data import read_splits
from kdplug.data.text_encoder import needs_pair_inputs
from kdplug.data.masking import needs_masking
from kdplug.data.masking import stage_dataset
from kdplug.data.word_encoder import WordEncoder
from kdplug.data.word_encoder import word_dataset
from kdplug import plots
from kdplug.distiller import Distiller
from kdplug.export import StudentExporter
from kdplug.errors import ConfigError
from kdplug.finetune import TeacherFinetuner
from kdplug.multi_worker import CustomLoopTrainer
from kdplug.multi_worker import is_chief
from kdplug.plugins import get_plugin_manager
from kdplug.report import accuracy
from kdplug.report import count_params
from kdplug.report import first_examples
from kdplug.report import latency_ms
from kdplug.report import write_report
from kdplug.schedules import make_optimizer
from kdplug.strategy import fit_can_jit_compile
from kdplug.strategy import make_strategy
from kdplug.strategy import precision_policy
from kdplug.students.utils import force_trainable
from kdplug.term_schedule import check_schedules
from kdplug.term_schedule import stage_schedules
from kdplug.teacher import load_teacher
from kdplug.teacher_pipeline import TeacherPipeline
from kdplug.teacher_pipeline import carries_taps
from kdplug.transfer_set import build_transfer_set

LATENCY_RUNS = 30


class Experiment:
    """One config, run end to end by `kdplug run`.

    Steps: read the data, load (and fine-tune, cached) the teacher, build the
    method's student, run every stage (each resumable: a finished stage is
    skipped on re-run, an interrupted one resumes from its last epoch
    checkpoint), evaluate teacher and student on the test split, save the
    student and write the report.

    Args:
        config: a validated `kdplug.config.ExperimentConfig`.
        plugin_manager: defaults to the process-wide one.
        log: a `print`-like function for progress messages.

    Examples:

    ```python
    report = Experiment(load_config("configs/quickstart.yaml")).run()
    report["student"]["accuracy"]
    ```
    """

    def __init__(self, config, plugin_manager=None, log=print):
        self.config = config
        self.pm = plugin_manager or get_plugin_manager()
        self.log = log
        self.run_dir = config.run_dir()
        self.seconds = {}
        self.words = None  # a WordEncoder when the student reads its own word ids

    def run(self):
        # training.mixed_precision: the Keras dtype policy while the models
        # are built and trained; the previous policy is restored afterwards.
        with precision_policy(self.config.training.mixed_precision):
            return self._run()

    def _run(self):
        cfg = self.config
        keras.utils.set_random_seed(cfg.seed)
        os.makedirs(self.run_dir, exist_ok=True)
        with open(os.path.join(self.run_dir, "config.yaml"), "w") as f:
            yaml.safe_dump(cfg.to_dict(), f, sort_keys=False)
        self.strategy = make_strategy(cfg.training.strategy)
        method_cls = self.pm.methods.get(cfg.method.name)
        if callable(getattr(method_cls, "run_experiment", None)):
            # A method with its own flow (e.g. the multi-task `mtdnn-ensemble`)
            # drives the run with this Experiment's helpers (run_stage, ...).
            return method_cls(cfg.method_config).run_experiment(self)
        splits = read_splits(cfg.data, cfg.resolve_path)
        teacher, encoder, teacher_info = self.prepare_teacher(splits)
        self.words = self._word_encoder(splits)
        train = splits["train"]
        if cfg.augment_steps:
            train = build_transfer_set(
                train, cfg.augment_steps, seed=cfg.seed, log=self.log,
                cache=bool(cfg.cache and cfg.cache.transfer_set),
            )
        method = self.pm.methods.get(cfg.method.name)(cfg.method_config)
        student_kind = self.pm.students.get(cfg.student.name)(cfg.student_config)
        with self.strategy.scope():
            student = method.build_student(teacher, student_kind, cfg.data.num_classes)
            stages = method.stages(teacher, student)
        # A siamese student on WordPiece ids reads each sentence on its own.
        encoder.pair_inputs = needs_pair_inputs(student)
        check_schedules(cfg.training.schedules, stages, cfg.file)
        extra, cache_info = self.teacher_outputs(teacher, encoder, train, stages)
        train_ds = self._dataset(
            encoder, train, cfg.training.batch_size, shuffle=True, seed=cfg.seed,
            extra=extra,
        )
        val_ds = self._eval_dataset(encoder, splits["validation"])
        test_ds = self._eval_dataset(encoder, splits["test"])
        self.tokenizer = encoder.tokenizer
        history = {}
        for index, stage in enumerate(stages):
            history[stage.name] = self.run_stage(
                index, stage, student, teacher, train_ds, val_ds
            )
        report = self.evaluate(teacher, student, test_ds, splits, history)
        extra = method.evaluate(student, test_ds, self.run_dir)
        if extra:
            report["method_evaluation"] = extra
        report["teacher"]["finetune"] = teacher_info
        report["transfer_set"] = {
            "original": len(splits["train"]), "total": len(train),
        }
        report["teacher_output_cache"] = cache_info
        if is_chief(self.strategy):  # one writer under multi-worker training
            student.save(os.path.join(self.run_dir, "student.keras"))
            if cfg.export:
                report["export"] = self.export(student, test_ds)
            report["plots"] = plots.write_plots(self.run_dir, report)
            write_report(self.run_dir, report)
            self.log(f"report: {os.path.join(self.run_dir, 'summary.md')}")
        return report

    def export(self, student, test_ds):
        """Exports the student in every configured format and measures each."""
        start = time.perf_counter()
        exporter = StudentExporter(student, sequence_length=self.config.data.sequence_length)
        result = exporter.run(
            os.path.join(self.run_dir, "export"), test_ds,
            formats=tuple(self.config.export.formats),
            batch_sizes=tuple(self.config.export.latency_batch_sizes),
            runs=LATENCY_RUNS,
        )
        self.seconds["export"] = time.perf_counter() - start
        return result

    def prepare_teacher(self, splits):
        """Loads the teacher, checks it against the data, fine-tunes it."""
        cfg = self.config
        with self.strategy.scope():
            teacher, tokenizer, source = load_teacher(
                cfg.teacher, cfg.data.num_classes, cfg.resolve_path
            )
        max_len = teacher.backbone.max_sequence_length
        if cfg.data.sequence_length > max_len:
            raise ConfigError(
                f"above the teacher's maximum sequence length {max_len}",
                cfg.file, "data.sequence_length", cfg.data.sequence_length,
            )
        if tokenizer.vocabulary_size() != teacher.backbone.vocabulary_size:
            raise ConfigError(
                f"tokenizer has {tokenizer.vocabulary_size()} tokens but the "
                f"teacher's embedding has {teacher.backbone.vocabulary_size}",
                cfg.file, "teacher.tokenizer", cfg.teacher.tokenizer,
            )
        encoder = TextEncoder(tokenizer, cfg.data.sequence_length)
        info = None
        if cfg.teacher.finetune is not None:
            start = time.perf_counter()
            ft = cfg.teacher.finetune
            train = encoder.dataset(splits["train"], ft.batch_size, shuffle=True,
                                    seed=cfg.seed)
            with self.strategy.scope():
                info = TeacherFinetuner(cfg, source, self.log).run(
                    teacher, train, self._eval_dataset(encoder, splits["validation"]),
                    jit_compile=(cfg.training.jit_compile
                                 and fit_can_jit_compile(self.strategy)),
                )
            self.seconds["teacher fine-tuning"] = time.perf_counter() - start
        return teacher, encoder, info

    def teacher_outputs(self, teacher, encoder, examples, stages):
        """Precomputes (or reloads) the teacher taps every stage reads.

        Returns `(extra_features, info)`; `({}, None)` when `cache:` is off,
        and the Distiller then runs the teacher online.
        """
        cache = self.config.cache
        taps = sorted(set().union(*(
            t.required_teacher_taps() for stage in stages for t in stage.terms
        )))
        if not (cache and cache.teacher_outputs and taps):
            return {}, None
        if any(needs_masking(stage.terms) for stage in stages):
            self.log("teacher-output cache: off, this method masks the teacher's "
                     "inputs on the fly (the teacher runs online)")
            return {}, None
        start = time.perf_counter()
        outputs = TeacherCache(
            teacher, encoder, examples, taps, dtype=cache.dtype,
            shard_size=cache.shard_size, batch_size=cache.batch_size, log=self.log,
        )
        info = outputs.precompute()
        self.seconds["teacher outputs"] = time.perf_counter() - start
        return outputs.load(), info

    def run_stage(self, index, stage, student, teacher, train_ds, val_ds,
                  metrics=None):
        """Trains one stage; skips it if a previous run finished it.

        `metrics`: Keras metrics on the student's logits and the labels;
        None means accuracy, `()` none (e.g. multi-task students).
        """
        cfg = self.config.training
        custom_metrics = None if metrics is None else list(metrics)
        tag = f"{index + 1:02d}-{stage.name}"
        done = os.path.join(self.run_dir, "stages", f"{tag}.weights.h5")
        if os.path.isfile(done):
            student.load_weights(done)
            load_term_weights(stage.terms, done.replace(".weights.h5", ".terms.npz"))
            self.log(f"stage {stage.name}: already finished, loaded {done}")
            return {}
        force_trainable(student)  # undo a previous stage's freezing
        if stage.trainable is not None:
            stage.trainable(student)
        seed = self.config.seed
        train_ds = stage_dataset(train_ds, stage, self.tokenizer, seed=seed + index)
        if val_ds is not None:
            val_ds = stage_dataset(val_ds, stage, self.tokenizer, seed=seed,
                                   training=False)
        epochs = stage.epochs or cfg.epochs
        steps = cfg.steps_per_epoch or int(train_ds.cardinality())
        backup = os.path.join(self.run_dir, "backup", tag)
        with self.strategy.scope():
            distiller = Distiller(student, teacher, stage.terms, name=f"distiller_{tag}")
            if metrics is None:  # created in the scope, like the models
                metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
            distiller.compile(
                optimizer=make_optimizer(
                    cfg.optimizer, stage.learning_rate or cfg.learning_rate,
                    steps * epochs, cfg.warmup_ratio, cfg.weight_decay,
                ),
                metrics=list(metrics) or None,
                jit_compile=cfg.jit_compile,
            )
        train_ds, val_ds = self.pipelined(distiller, teacher, train_ds, val_ds)
        multi_worker = isinstance(
            self.strategy, tf.distribute.MultiWorkerMirroredStrategy
        )
        # fit() cannot XLA-compile a step whose replicas live on several local
        # devices (keras-team/keras#19005); the custom loop compiles each
        # replica's forward and backward pass instead (docs/distributed.md).
        custom_loop = multi_worker or (
            cfg.jit_compile and not fit_can_jit_compile(self.strategy))
        callbacks = [
            StopOnNaN(stage.name, backup),
            keras.callbacks.TensorBoard(os.path.join(self.run_dir, "tensorboard", tag)),
        ]
        if not custom_loop:  # the custom loop checkpoints itself
            callbacks.insert(0, ResumableBackup(backup, stage.name, log=self.log))
        for extra in self.pm.hook.kdplug_callbacks(config=self.config):
            callbacks.extend(extra or [])
        callbacks.extend(stage_schedules(cfg.schedules, stage, steps * epochs))
        self.log(f"stage {stage.name}: {epochs} epoch(s) x {steps} steps, "
                 f"terms: {', '.join(t.name for t in stage.terms)}")
        start = time.perf_counter()
        if custom_loop:  # Keras 3 fit() cannot run this (see above)
            history = CustomLoopTrainer(
                distiller, strategy=self.strategy, jit_compile=cfg.jit_compile,
                metrics=custom_metrics,
            ).fit(
                train_ds, validation_data=val_ds, epochs=epochs,
                steps_per_epoch=cfg.steps_per_epoch, callbacks=callbacks,
                backup_dir=backup, verbose=0 if cfg.verbose == 0 else 1,
            )
        else:
            history = distiller.fit(
                train_ds,
                validation_data=val_ds,
                epochs=epochs,
                steps_per_epoch=cfg.steps_per_epoch,
                callbacks=callbacks,
                verbose=cfg.verbose,
                shuffle=False,  # the dataset reshuffles itself every epoch
            ).history
        self.seconds[f"stage {stage.name}"] = time.perf_counter() - start
        self.log(f"stage {stage.name}: done, "
                 f"{int(distiller.optimizer.iterations.numpy())} optimizer steps")
        if is_chief(self.strategy):
            os.makedirs(os.path.dirname(done), exist_ok=True)
            save_term_weights(stage.terms, done.replace(".weights.h5", ".terms.npz"))
            student.save_weights(done)  # written last: marks the stage finished
        return {k: [float(v) for v in vals] for k, vals in history.items()}

    def pipelined(self, distiller, teacher, train_ds, val_ds):
        """`teacher.pipeline:`: the online teacher's taps computed in the
        input pipeline (`TeacherPipeline`), not in the train step."""
        cfg = self.config.teacher.pipeline
        names = distiller.teacher_tap_names
        if cfg is None or teacher is None or not names or carries_taps(train_ds, names):
            return train_ds, val_ds
        pipeline = TeacherPipeline(teacher, names, dtype=cfg.dtype,
                                   trim_padding=cfg.trim_padding,
                                   length_chunks=cfg.length_chunks,
                                   jit_compile=cfg.jit_compile)
        self.log(f"teacher pipeline: {pipeline.dtype} teacher in the input pipeline"
                 + (", XLA" if pipeline.jit_compile else "")
                 + (", padding trimmed" if pipeline.trim_padding else "")
                 + (f" in {pipeline.length_chunks} length-sorted chunks"
                    if pipeline.length_chunks > 1 else ""))
        return pipeline(train_ds), None if val_ds is None else pipeline(val_ds)

    def evaluate(self, teacher, student, test_ds, splits, history):
        start = time.perf_counter()
        one = first_examples(test_ds, 1)
        report = {
            "name": self.config.name,
            "method": self.config.method.name,
            "data": self.config.data.path,
            "test_examples": len(splits["test"]),
            "latency_runs": LATENCY_RUNS,
            "history": history,
        }
        for role, model in (("teacher", teacher), ("student", student)):
            report[role] = {
                "accuracy": accuracy(model, test_ds),
                "params": count_params(model),
                "latency_ms": latency_ms(model, one, runs=LATENCY_RUNS),
            }
            self.log(f"{role}: test accuracy {report[role]['accuracy']:.4f}")
        self.seconds["evaluation"] = time.perf_counter() - start
        report["seconds"] = dict(self.seconds)
        return report

    def _word_encoder(self, splits):
        """A word vocabulary from the training texts, for `input: word_ids`
        students (e.g. BiLSTM); saved next to the student."""
        cfg = self.config
        if getattr(cfg.student_config, "input", None) != "word_ids":
            return None
        words = WordEncoder.from_examples(
            splits["train"], cfg.data.sequence_length,
            max_vocabulary_size=cfg.student_config.vocabulary_size,
        )
        words.save(os.path.join(self.run_dir, "word_vocabulary.json"))
        return words

    def _dataset(self, encoder, examples, batch_size, **kwargs):
        if self.words is None:
            return encoder.dataset(examples, batch_size, **kwargs)
        return word_dataset(encoder, self.words, examples, batch_size, **kwargs)

    def _eval_dataset(self, encoder, examples):
        if examples is None:
            return None
        return self._dataset(encoder, examples, max(self.config.training.batch_size, 64))


def save_term_weights(terms, path):
    """Saves the terms' own weights (projections, heads, schedulable
    scalars) so a later stage that shares them resumes with trained values."""
    arrays = {
        f"{term.name}/{i}": value
        for term in terms
        for i, value in enumerate(term.get_weights())
    }
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def load_term_weights(terms, path):
    if not os.path.isfile(path):
        return
    with np.load(path) as arrays:
        for term in terms:
            values = [arrays[f"{term.name}/{i}"] for i in range(len(term.weights))]
            term.set_weights(values)
