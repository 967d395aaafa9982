"""`SingleTaskRunner`: one teacher, one student, the method's stages."""

import keras

from kdplug import storage
from kdplug.data.length_buckets import dataset_by_length
from kdplug.data.masking import needs_masking
from kdplug.data.readers import describe_sources
from kdplug.data.readers import read_splits
from kdplug.data.student_text_encoder import StudentTextEncoder
from kdplug.data.text_corpus import TextCorpus
from kdplug.data.text_encoder import needs_pair_inputs
from kdplug.data.transfer_set import build_transfer_set
from kdplug.data.word_encoder import WordEncoder
from kdplug.data.word_encoder import word_dataset
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.errors import config_error
from kdplug.evaluation.collapse import ADVICE
from kdplug.evaluation.collapse import collapse_check
from kdplug.evaluation.export import StudentExporter
from kdplug.evaluation.export_measure import export_and_measure
from kdplug.evaluation.measure import count_params
from kdplug.evaluation.measure import first_examples
from kdplug.evaluation.measure import latency_ms
from kdplug.evaluation.measure import predict_outputs
from kdplug.models.float32_copy import float32_copy
from kdplug.models.keyed_inputs import KeyedInputs
from kdplug.run.runner import Runner
from kdplug.run.runner import random_state_kept
from kdplug.run.stage_runner import StageRunner
from kdplug.run.teacher_setup import EVAL_BATCH_SIZE
from kdplug.run.teacher_setup import TeacherSetup
from kdplug.run.teacher_setup import teacher_seed
from kdplug.run_files import ANALYSIS
from kdplug.run_files import EXPORT
from kdplug.run_files import EXPORT_LABELS
from kdplug.run_files import LABEL_MAP
from kdplug.run_files import PREDICTIONS
from kdplug.run_files import STUDENT_FILE
from kdplug.run_files import STUDENT_TOKENIZER
from kdplug.run_files import WORD_VOCABULARY
from kdplug.storage import format_size
from kdplug.teacher.loading import check_sequence_length
from kdplug.teacher.loading import check_teacher_serves
from kdplug.teacher.output_cache import TeacherCache
from kdplug.training.callbacks.keep_best_epoch import check_early_stopping
from kdplug.training.term_schedule import check_schedules


class SingleTaskRunner(Runner):
    """The default runner: distils one student on one task.

    Steps: read the data; load, check and fine-tune (cached) the teacher;
    build the transfer set (`augment:`); build the method's student and
    stages; precompute (or reload) the teacher's outputs (`cache:`); train
    every stage (`StageRunner`: resumable, finished stages skipped; a stage
    with inputs of its own, `Stage.own_inputs`, gets its corpus and teacher
    from `stage_inputs`); evaluate
    teacher and student on the test split (the validation split when the
    data has none; plus `Method.evaluate`); export; write the report. Class
    names (`data.label_names`, or found in the data) are saved as
    `label_map.json` and beside the exports (`export/labels.json`).

    Args:
        method: the configured `Method`.
        context: the run's `RunContext`.

    Examples:

    ```python
    context = RunContext.create(config)
    report = SingleTaskRunner(context.method(), context).run()
    report["student"]["accuracy"]
    ```
    """

    reads_in_memory_data = True
    _pretrained = None  # the pre-trained teacher, once a stage asks for it

    def run(self):
        ctx, cfg, method = self.context, self.context.config, self.method
        with ctx.timers("reading data"):
            splits = self.read_splits()
        self._save_label_map(splits.label_map)
        kind = ctx.student_kind()
        steps = ctx.augment_steps()  # built (and checked) before the fine-tuning
        teacher, tokenizer, teacher_info = self.prepare_teacher(splits, kind)
        words = self._word_encoder(splits)
        train = splits["train"]
        if steps:
            with ctx.timers("augmentation"):
                train = build_transfer_set(
                    train, steps, seed=cfg.seed,
                    cache=bool(cfg.cache and cfg.cache.transfer_set))
        with ctx.strategy.scope():
            student, stages = build_stages(method, teacher, kind, cfg)
        kind.pretrained_weights = None  # drop the host copy (init: pretrained)
        words = words or self._student_text_encoder(kind, student)
        # A siamese student on WordPiece ids reads each sentence on its own.
        encoder = TeacherSetup(ctx).encoder(tokenizer, needs_pair_inputs(student))
        outputs, cache_info = self.teacher_outputs(
            teacher, encoder, train, [s for s in stages if not s.own_inputs])
        buckets = ctx.length_buckets()
        train_ds = self._train_dataset(encoder, words, train, outputs, buckets)
        # Evaluation datasets stay padded (the latency example and the exports
        # need the fixed shape); the prediction passes over them (test metrics,
        # validation metrics, collapse check) read them in length buckets
        # (`evaluate`), and Keras' validation pass (val_loss, val_accuracy)
        # reads the validation split's examples in length buckets of its own:
        # the same per-example means as the padded batches.
        val_ds = self._eval_dataset(encoder, words, splits["validation"])
        fit_val_ds = (dataset_by_length(val_ds, buckets)
                      if buckets is not None and val_ds is not None else None)
        split = self._evaluation_split(splits)  # test, or validation without one
        test_ds = self._eval_dataset(encoder, words, splits[split])
        runner = StageRunner(ctx)
        histories, own_inputs = {}, {}
        for index, stage in enumerate(stages):
            stage_teacher, stage_train = teacher, train_ds
            if stage.own_inputs and runner.finished_weights(index, stage) is None:
                stage_teacher, stage_train, own_inputs[stage.name] = self.stage_inputs(
                    stage, encoder, words, train, buckets, teacher)
            histories[stage.name] = runner.run(
                index, stage, student, stage_teacher, stage_train, val_ds,
                tokenizer=tokenizer, last=index == len(stages) - 1,
                fit_val_ds=fit_val_ds)
        # measured and exported as they are deployed: computing in float32
        # (a mixed-precision model keeps float32 weights)
        teacher, student = float32_copy(teacher), float32_copy(student)
        with ctx.timers("evaluation"):
            report = self.evaluate(teacher, student, test_ds,
                                   self.task.count(splits[split]), split)
        report["evaluation_split"] = split
        if splits.label_map is not None and splits.label_map.named:
            report["labels"] = splits.label_map.to_json()
        report["history"] = {name: h.epochs for name, h in histories.items()}
        report["step_history"] = {name: h.steps for name, h in histories.items()}
        report["early_stopping"] = {name: h.best for name, h in histories.items()
                                    if h.best}
        report["checks"] = {name: h.checks for name, h in histories.items() if h.checks}
        extra_eval = method.evaluate(student, test_ds, ctx.run_dir)
        if extra_eval:
            report["method_evaluation"] = extra_eval
        report["teacher"]["finetune"] = teacher_info
        report["transfer_set"] = {"original": len(splits["train"]), "total": len(train)}
        report["teacher_output_cache"] = cache_info
        if own_inputs:
            report["stage_inputs"] = own_inputs
        saved = None  # student.keras, written once (the export links to it)
        if ctx.is_chief and cfg.export:
            saved = self.save_student(student)
            report["export"] = self.export(
                student, test_ds, splits.label_map, saved,
                tokenizer=words.tokenizer if isinstance(words, StudentTextEncoder)
                else tokenizer)
        report["seconds"] = dict(ctx.timers.seconds)
        report["resumed"] = dict(ctx.timers.resumed)
        report = self.write_run_report(report, None if saved else student)
        # one copy of the student: the last stage's file names student.keras
        runner.point_at(len(stages) - 1, stages[-1], self.context.path(STUDENT_FILE))
        if ctx.is_chief and cfg.analysis:
            with ctx.timers("analysis"):
                self.analyze(teacher, student, encoder, words, splits)
        return report

    def finetune_teacher(self):
        return self.prepare_teacher(self.read_splits())[2]

    @property
    def task(self):
        """The run's task kind (`kdplug.tasks.Task`, from `data.task`)."""
        return self.method.task

    def read_splits(self):
        """The data's splits, labels read as the task kind reads them (the
        in-memory data's, already read, `context.data`)."""
        if self.context.data is not None:
            return self.context.data
        cfg = self.context.config
        return read_splits(cfg.data, cfg.resolve_path, label_kind=self.task.label_kind,
                           seed=cfg.seed)

    # ------------------------------------------------------------- pieces
    def prepare_teacher(self, splits, student_kind=None):
        """`(teacher, tokenizer, finetune_info)`: loaded, checked, fine-tuned.

        A `student_kind` that needs the teacher's pre-trained weights (e.g.
        `truncated` with `init: pretrained`) gets them here, before the
        teacher is fine-tuned in place (`TeacherSetup.keep_pretrained`).
        When the teacher is to be fine-tuned now (not found in the cache),
        the student and stages are built first on the teacher as loaded
        (`check_stages`), so that what `kdplug validate --build` checks
        fails before the fine-tuning, not after it."""
        cfg = self.context.config
        own_seed = teacher_seed(cfg) != cfg.seed  # teacher.finetune.seed
        if own_seed:  # the new head's initial weights and the fine-tuning
            keras.utils.set_random_seed(teacher_seed(cfg))
        setup = TeacherSetup(self.context)
        teacher, tokenizer, source = setup.load(self.task.num_outputs(cfg.data),
                                                **self.task.head_options())
        self.task.prepare(splits, setup.encoder(tokenizer), self.context.log)
        setup.keep_pretrained(teacher, student_kind)
        finetuner = setup.finetuner(source, self.task.objective())
        if student_kind is not None and finetuner is not None and not finetuner.is_cached():
            self.check_stages(teacher, student_kind)
        with self.context.timers("teacher fine-tuning"):
            info = setup.finetune(teacher, source, setup.encoder(tokenizer),
                                  splits["train"], splits["validation"],
                                  finetuner=finetuner)
        # The student's draws (initial weights, data order) follow the run's
        # seed from here, whether the teacher was fine-tuned now or loaded
        # from the cache: a warm cache gives the same student as a cold one.
        keras.utils.set_random_seed(cfg.seed)
        return teacher, tokenizer, info

    def check_stages(self, teacher, student_kind):
        """Builds the method's student and stages on `teacher` as loaded
        (not yet fine-tuned) and drops them: the checks of `build_stages`,
        those of `kdplug validate --build` (a student's maximum sequence
        length, a layer mapping beyond its layers, a term a student of its
        own tokenizer cannot compare, schedules naming a missing stage),
        before the fine-tuning. Python's and NumPy's random states (which
        seed Keras' initialisers) are put back, so the fine-tuning draws
        what it draws without this check."""
        with random_state_kept(), self.context.strategy.scope():
            build_stages(self.method, teacher, student_kind, self.context.config)

    def teacher_outputs(self, teacher, encoder, examples, stages):
        """Precomputes (or finds) the teacher taps every stage reads.

        Returns `(TeacherCache, info)`, or `(None, info)` when the teacher
        runs online instead: `cache:` off, a method that masks the teacher's
        inputs, or an entry larger than `cache.disk_budget_gb`.
        """
        ctx, cache = self.context, self.context.config.cache
        taps = sorted(set().union(*(
            t.required_teacher_taps() for stage in stages for t in stage.terms
        )))
        if not (cache and cache.teacher_outputs and taps):
            return None, None
        if any(needs_masking(stage.terms) for stage in stages):
            ctx.log.info("teacher-output cache: off, this method masks the "
                         "teacher's inputs on the fly (the teacher runs online)")
            return None, None
        with ctx.timers("teacher outputs"):
            outputs = TeacherCache(
                teacher, encoder, examples, taps, dtype=cache.dtype,
                shard_size=cache.shard_size, batch_size=cache.batch_size,
                jit_compile=ctx.config.training.jit_compile,
                length_buckets=ctx.length_buckets(),
            )
            if not outputs.is_complete():
                need = outputs.estimated_bytes()
                if need > cache.disk_budget_gb * 2**30:
                    ctx.log.info(
                        "teacher-output cache: off, %d taps of %d examples would "
                        "take %s, over cache.disk_budget_gb (%g); the teacher "
                        "runs online", len(taps), len(examples), format_size(need),
                        cache.disk_budget_gb)
                    return None, {"cached": False, "online": "over disk budget",
                                  "bytes_needed": need}
            return outputs, outputs.precompute()

    def stage_inputs(self, stage, encoder, words, train, buckets, teacher):
        """`(teacher, train_ds, info)` of a stage with inputs of its own
        (`Stage.own_inputs`): the pre-trained teacher (loaded again from
        `teacher.source`, once per run) or the run's, and the texts of its
        `TextCorpus` (else the transfer set `train`), with teacher outputs
        cached for this stage alone, as for the others."""
        ctx, cfg = self.context, self.context.config
        if stage.teacher == "pretrained":
            teacher = self._pretrained_teacher()
        examples = train
        if isinstance(stage.data, TextCorpus):
            with ctx.timers("reading data"):
                examples = stage.data.read(cfg.data, cfg.resolve_path)
        outputs, cache_info = self.teacher_outputs(teacher, encoder, examples, [stage])
        ctx.log.info("stage %s: %d texts from %s, the %s teacher", stage.name,
                     len(examples), examples.source or "the transfer set", stage.teacher)
        info = {"teacher": stage.teacher, "examples": len(examples),
                "source": examples.source or "transfer set",
                "teacher_output_cache": cache_info}
        return teacher, self._train_dataset(encoder, words, examples, outputs,
                                            buckets), info

    def _pretrained_teacher(self):
        """The teacher as `teacher.source` gives it, before fine-tuning
        (its head untrained), for stages on the pre-trained teacher."""
        if self._pretrained is None:
            cfg = self.context.config
            self._pretrained, _, _ = TeacherSetup(self.context).load(
                self.task.num_outputs(cfg.data), **self.task.head_options())
            self.context.log.info("teacher: loaded again from %s, as pre-trained, "
                                  "for stages that distil from it", cfg.teacher.source)
        return self._pretrained

    def _train_dataset(self, encoder, words, examples, outputs, buckets):
        """The shuffled training batches of `examples`, carrying the teacher
        outputs `outputs` holds (a `TeacherCache`, or None)."""
        cfg = self.context.config
        if outputs is None:
            return self._dataset(encoder, words, examples, cfg.training.batch_size,
                                 shuffle=True, seed=cfg.seed, length_buckets=buckets)
        # read from disk shard by shard, never the whole split in memory
        return outputs.stream(cfg.training.batch_size, shuffle=True, seed=cfg.seed,
                              features=self._features(encoder, words),
                              length_buckets=buckets)

    def evaluate(self, teacher, student, test_ds, test_examples, split="test"):
        """The task's primary metric (accuracy, Pearson, micro F1) and
        `evaluation.metrics` on `split` (from one prediction pass per
        model, XLA-compiled when `training.jit_compile` is; in batches of
        similar length with `training.length_buckets`, the outputs back in
        the split's order: `predict_outputs`), parameters and batch-1
        latency of both models (on the padded first example)."""
        cfg, task = self.context.config, self.task
        names = cfg.evaluation.for_kind(task.name)
        measured = task.metric_names(cfg.evaluation)
        one = first_examples(test_ds, 1)
        report = {
            "name": cfg.name,
            "method": cfg.method.name,
            "task": task.name,
            "primary_metric": task.primary,
            "data": describe_sources(cfg.data),
            "test_examples": test_examples,
            "latency_runs": cfg.evaluation.latency_runs,
        }
        predictions = {}
        for role, model in (("teacher", teacher), ("student", student)):
            outputs, labels = predict_outputs(model, test_ds,
                                              jit_compile=cfg.training.jit_compile,
                                              length_buckets=self.context.length_buckets())
            predictions.update({role: outputs, "labels": labels})
            values = task.metrics(measured, outputs, labels)
            report[role] = {
                task.primary: values[task.primary],
                "metrics": {name: values[name] for name in names},
                "params": count_params(model),
                "latency_ms": latency_ms(model, one, runs=cfg.evaluation.latency_runs),
                "collapse": collapse_check(task.label_kind, outputs, labels),
            }
            self.context.log.info("%s: %s %s", role, split, ", ".join(
                f"{name} {value:.4f}" for name, value in values.items()))
            if report[role]["collapse"]["collapsed"]:
                self.context.log.warning(
                    "the %s has collapsed to one answer: on the %s split it %s; %s",
                    role, split, report[role]["collapse"]["text"], ADVICE)
        if self.context.is_chief:
            storage.write_npz(self.context.path(PREDICTIONS), predictions)
        return report

    def export(self, student, test_ds, label_map=None, keras_file=None, tokenizer=None):
        """Exports the student in every configured format and measures each;
        class names (a `LabelMap` with names) go beside them, `labels.json`.
        `keras_file`: the student already saved (the `.keras` export links
        to it instead of a second copy). A student with its own tokenizer
        (`KeyedInputs`) ships its inner model, which reads plain
        `token_ids`, with that tokenizer."""
        ctx, cfg = self.context, self.context.config
        if isinstance(student, KeyedInputs):
            test_ds = test_ds.map(lambda x, *rest: (student.own_features(x), *rest))
            student, keras_file = student.model, None
        with ctx.timers("export"):
            exporter = StudentExporter(
                student, sequence_length=cfg.data.sequence_length, tokenizer=tokenizer,
                label_names=label_map.names if label_map is not None and label_map.named
                else None)
            task = self.task
            metric = None if task.name == "classification" else (
                task.primary,
                lambda outputs, labels: task.metrics([task.primary], outputs,
                                                     labels)[task.primary])
            report = export_and_measure(
                exporter, ctx.path(EXPORT), test_ds,
                formats=tuple(cfg.export.formats),
                batch_sizes=tuple(cfg.export.latency_batch_sizes),
                runs=cfg.evaluation.latency_runs, metric=metric, keras_file=keras_file,
            )
        if label_map is not None and label_map.named:
            report["labels"] = storage.write_json(
                ctx.path(EXPORT, EXPORT_LABELS), label_map.to_json())
        return report

    def _save_label_map(self, label_map):
        """`<run>/label_map.json` when the classes have names (the run's
        `inputs:` log line names them already)."""
        if label_map is None or not label_map.named:
            return
        if self.context.is_chief:
            storage.write_json(self.context.path(LABEL_MAP), label_map.to_json())

    def _evaluation_split(self, splits):
        """`test`, or `validation` when the data has no test split (logged;
        the report's `evaluation_split` says which)."""
        if splits["test"] is not None:
            return "test"
        self.context.log.info(
            "no test split: teacher and student are evaluated, and the exports "
            "measured, on the validation split (the report says so)")
        return "validation"

    def analyze(self, teacher, student, encoder, words, splits):
        """The config's `analysis:` on this run's teacher and student, into
        `<run>/analysis/` (what `kdplug analyze RUN_DIR` writes)."""
        from kdplug.analysis.analyzer import AnalysedModel
        from kdplug.analysis.analyzer import analyze_models
        from kdplug.analysis.analyzer import class_names

        cfg = self.context.config
        dataset = lambda examples, batch: self._dataset(  # noqa: E731
            encoder, words, examples, batch)
        behaviour = cfg.analysis.behaviour
        examples = splits[behaviour.split] if behaviour else None
        jit, buckets = cfg.training.jit_compile, self.context.length_buckets()
        analyze_models(
            AnalysedModel("teacher", teacher, dataset, role="teacher", jit_compile=jit,
                          length_buckets=buckets),
            [AnalysedModel("student", student, dataset, jit_compile=jit,
                           length_buckets=buckets)],
            examples=examples, corpus_texts=splits["train"].texts,
            output_dir=self.context.path(ANALYSIS), config=cfg.analysis,
            base_dir=cfg.base_dir, title=f"{cfg.name}: teacher vs student",
            label_names=class_names(splits.label_map))
        self.context.log.info("analysis: %s", self.context.path(ANALYSIS))

    def _word_encoder(self, splits):
        """A word vocabulary from the training texts, for `input: word_ids`
        students (e.g. BiLSTM); saved next to the student."""
        cfg = self.context.config
        if getattr(cfg.student_config, "input", None) != "word_ids":
            return None
        words = WordEncoder.from_examples(
            splits["train"], cfg.data.sequence_length,
            max_vocabulary_size=cfg.student_config.vocabulary_size,
        )
        words.save(self.context.path(WORD_VOCABULARY))
        return words

    def _student_text_encoder(self, kind, student):
        """The student's own subword encoding (`student.kind: hub`, a
        `KeyedInputs` student), its tokenizer saved in the run folder for
        `kdplug predict` and the exports; None for a student reading the
        teacher's tokens."""
        if not isinstance(student, KeyedInputs):
            return None
        cfg = self.context.config
        backbone = student.model.backbone  # its length checked by build_stages
        encoder = StudentTextEncoder(kind.tokenizer, cfg.data.sequence_length,
                                     prefix=student.prefix)
        if self.context.is_chief:
            encoder.save(self.context.path(STUDENT_TOKENIZER), backbone)
        self.context.log.info("student: its own tokenizer (%s, %d pieces), saved in %s",
                              type(kind.tokenizer).__name__,
                              kind.tokenizer.vocabulary_size(), STUDENT_TOKENIZER)
        return encoder

    @staticmethod
    def _features(encoder, words):
        """`fn(examples) -> features` of the student and teacher inputs (what
        `_dataset` encodes), for streaming cached teacher outputs."""
        if words is None:
            return encoder.encode_examples
        return lambda part: {**encoder.encode_examples(part), **words.features(part)}

    @staticmethod
    def _dataset(encoder, words, examples, batch_size, **kwargs):
        if words is None:
            return encoder.dataset(examples, batch_size, **kwargs)
        return word_dataset(encoder, words, examples, batch_size, **kwargs)

    def _eval_dataset(self, encoder, words, examples):
        if examples is None:
            return None
        batch = max(self.context.config.training.batch_size, EVAL_BATCH_SIZE)
        return self._dataset(encoder, words, examples, batch)


def runner_class(method):
    """The `Runner` class that runs `method`: its own (`Method.runner`), or
    `SingleTaskRunner` when it declares none."""
    return method.runner or SingleTaskRunner


def build_stages(method, teacher, student_kind, config):
    """`(student, stages)`: the method's student of `student_kind` and its
    stages for `teacher`, checked as every run checks them before its first
    step (and `kdplug validate --build` before any run, and `kdplug run`
    before it fine-tunes the teacher, `SingleTaskRunner.check_stages`): the
    student fits the task and `data.sequence_length`, the teacher serves
    every tap the terms read (a tap its family lacks, an untrained head
    without `teacher.finetune`), a student with its own tokenizer meets the
    teacher on per-example taps only, and the `training.schedules` and
    `training.early_stopping` name real stages and terms. Raises
    `ConfigError`s naming the config file and field: the student kind's
    and the method's own checks (a layer mapping beyond the student's
    layers), which know no file, name theirs or `student` / `method`."""
    student = checked_student(lambda: method.build_student(
        teacher, student_kind, method.task.num_outputs(config.data)), config)
    method.task.check_student(student, config.student.name)
    try:
        stages = method.stages(teacher, student)
    except KdplugError as e:  # a method's (or its layer mapping's) own check
        raise config_error(e, config.file, "method") from None
    check_teacher_serves(teacher, config, stages)
    check_own_tokenizer_terms(student, config, stages)
    check_schedules(config.training.schedules, stages, config.file)
    check_early_stopping(config.training.early_stopping, stages, config.file)
    return student, stages


def checked_student(build, config):
    """`build()`, the student (a runner's build of it: a student kind's,
    a method's), checked as every runner checks it before training: the
    student kind's own errors, which know no file, as `ConfigError`s naming
    the config file and `student`, and its maximum sequence length against
    `data.sequence_length`."""
    try:
        student = build()
    except KdplugError as e:  # a student kind's own check knows no file
        raise config_error(e, config.file, "student") from None
    check_sequence_length(student_backbone(student), config, "student")
    return student


def student_backbone(student):
    """The part of a student that holds its position embeddings (its
    `max_sequence_length`): the backbone of a keras-hub model, inside a
    `KeyedInputs` for a student of its own tokenizer; the student itself
    otherwise."""
    model = student.model if isinstance(student, KeyedInputs) else student
    return getattr(model, "backbone", model)


def check_own_tokenizer_terms(student, config, stages):
    """A student with its own tokenizer (`kdplug.models.KeyedInputs`,
    `student.kind: hub`) meets the teacher on per-example taps only
    (`logits` of a sentence head, `pooled`, `cls/<i>`; hidden states,
    attention maps and per-token outputs run over positions the two
    tokenizers do not share): a term reading anything else of either model
    is a `ConfigError` naming the stage, the term and the tap."""
    if not isinstance(student, KeyedInputs):
        return
    for stage in stages:
        for term in stage.terms:
            taps = set(term.required_student_taps()) | set(term.required_teacher_taps())
            for tap in sorted(taps):
                if student.compares(tap):
                    continue
                shown = "logits (one per token)" if tap == "logits" else tap
                raise ConfigError(
                    f"{stage.name}/{term.name} reads {shown!r}, which runs over token "
                    "positions; this student encodes the text with its own tokenizer, "
                    "so its positions are not the teacher's. Choose a method whose "
                    "terms read logits, pooled or cls/<i> (docs/models.md, `hub`), "
                    "or a student that reads the teacher's tokens: `truncated` (the "
                    "teacher's own layers, any family) or, for a teacher with segment "
                    "embeddings such as BERT, `narrow`", config.file, "student.kind",
                    config.student.name)
