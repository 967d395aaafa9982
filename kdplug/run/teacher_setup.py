"""`TeacherSetup`: the teacher of a run, loaded, checked and fine-tuned."""

from kdplug.data.text_encoder import TextEncoder
from kdplug.plugin.student_kind import PretrainedWeights
from kdplug.tasks import task_objective
from kdplug.teacher.finetune import TeacherFinetuner
from kdplug.teacher.loading import check_teacher
from kdplug.teacher.loading import load_teacher
from kdplug.teacher.sanity import check_finite_outputs
from kdplug.training.distribution import fit_can_jit_compile
from kdplug.training.distribution import resolve_jit_compile

EVAL_BATCH_SIZE = 64


class TeacherSetup:
    """Loads the configured teacher, checks it against the data, and
    fine-tunes it (cached by content) with an objective.

    Every runner gets its teacher through here, so every runner builds it
    under the run's strategy, refuses a sequence length or tokenizer the
    teacher cannot take with the same error, and shares the fine-tuning
    cache.

    Args:
        context: the run's `RunContext`.

    Examples:

    ```python
    setup = TeacherSetup(context)
    teacher, tokenizer, source = setup.load(num_outputs=2)
    setup.keep_pretrained(teacher, student_kind)  # before fine-tuning
    encoder = setup.encoder(tokenizer)
    info = setup.finetune(teacher, source, encoder, splits["train"],
                          splits["validation"])
    ```
    """

    def __init__(self, context):
        self.context = context

    def load(self, num_outputs, **head):
        """`(teacher, tokenizer, source)`: the configured teacher with a
        `num_outputs`-wide head (`head`: more options of it, e.g. the task's
        `per_token`), built under the run's strategy and checked
        (`kdplug.teacher.check_teacher`; a checkpoint whose outputs are
        already NaN is refused here, `check_finite_outputs`)."""
        cfg = self.context.config
        with self.context.strategy.scope():
            teacher, tokenizer, source = load_teacher(
                cfg.teacher, num_outputs, cfg.resolve_path, **head)
        check_teacher(teacher, tokenizer, cfg)
        check_finite_outputs(teacher, self.encoder(tokenizer), cfg)
        return teacher, tokenizer, source

    def keep_pretrained(self, teacher, student_kind):
        """Gives `student_kind` the teacher's weights as loaded from
        `teacher.source` when it asks for them (`needs_pretrained_weights`,
        e.g. `truncated` with `init: pretrained`). Call it after `load()` and
        before `finetune()`, which changes the teacher in place.

        Args:
            teacher: from `load()`.
            student_kind: the configured `StudentKind` (None: nothing to do).

        Returns:
            The `PretrainedWeights` set on the kind, or None.
        """
        if student_kind is None or not student_kind.needs_pretrained_weights:
            return None
        pretrained = PretrainedWeights(teacher)
        student_kind.pretrained_weights = pretrained
        self.context.log.info(
            "student.init: pretrained: kept the teacher's weights before "
            "fine-tuning (%.1f MB on the host)", pretrained.num_bytes / 2**20)
        return pretrained

    def encoder(self, tokenizer, pair_inputs=False):
        """A `TextEncoder` for the teacher's tokenizer at
        `data.sequence_length`: one per run, tokenizer and kind of input
        (kept in `context.encoders`), so its traced tokenizer (half a second
        or more to trace) serves the fine-tuning, the task's checks and
        every split."""
        key = (tokenizer, bool(pair_inputs))  # a tokenizer hashes by identity
        if key not in self.context.encoders:
            self.context.encoders[key] = TextEncoder(
                tokenizer, self.context.config.data.sequence_length,
                pair_inputs=pair_inputs)
        return self.context.encoders[key]

    def finetuner(self, source, objective=None, config=None):
        """The `TeacherFinetuner` of this run's teacher (None without
        `teacher.finetune`): its cache entry, keyed by the teacher's files,
        the data (the in-memory data's fingerprint included) and the
        settings.

        Args:
            source: from `load()`.
            objective: see `kdplug.teacher.objectives` (default: the
                config's task kind's).
            config: the config the cache key reads (default the run's; a
                multi-task runner passes one member's: its task's `data`,
                its seed).
        """
        cfg = config or self.context.config
        if cfg.teacher.finetune is None:
            return None
        return TeacherFinetuner(cfg, source, objective or task_objective(cfg),
                                data_fingerprint=self.context.data_fingerprint)

    def finetune(self, teacher, source, encoder, train, validation, objective=None,
                 config=None, finetuner=None):
        """Fine-tunes `teacher` in place (or loads the cached weights), in
        length buckets when `training.length_buckets` is on: its training
        batches, and every pass over the dev split (`TeacherFinetuner.run`).

        Args:
            teacher, source: from `load()`.
            encoder: the teacher's `TextEncoder`.
            train, validation: `Examples` (validation may be None).
            objective, config: as for `finetuner()`.
            finetuner: the `finetuner()` already made (its key is not
                computed twice).

        Returns:
            The fine-tuning info dict, or None without `teacher.finetune`.
        """
        ctx = self.context
        cfg = config or ctx.config
        ft = cfg.teacher.finetune
        if ft is None:
            return None
        finetuner = finetuner or self.finetuner(source, objective, config)
        train_ds = encoder.dataset(train, ft.batch_size, shuffle=True,
                                   seed=teacher_seed(cfg),
                                   length_buckets=ctx.length_buckets())
        val_ds = None
        if validation is not None:  # padded; every pass reads it by length
            val_ds = encoder.dataset(
                validation, max(cfg.training.batch_size, EVAL_BATCH_SIZE))
        with ctx.strategy.scope():
            return finetuner.run(
                teacher, train_ds, val_ds,
                jit_compile=(resolve_jit_compile(cfg.training.jit_compile)
                             and fit_can_jit_compile(ctx.strategy)),
                length_buckets=ctx.length_buckets(),
            )


def teacher_seed(config):
    """The seed the teacher is fine-tuned with: `teacher.finetune.seed`, or
    the run's `seed`."""
    ft = config.teacher.finetune
    return config.seed if ft is None or ft.seed is None else ft.seed
