import contextlib
import math
import os
import time

import keras
import keras_hub
import numpy as np
import tensorflow as tf

import kdplug
from kdplug import keys
from kdplug import storage
from kdplug.errors import ConfigError
from kdplug.evaluation import LOSS_CURVES
from kdplug.evaluation import count_params
from kdplug.evaluation import loss_curves
from kdplug.run import EVAL_BATCH_SIZE
from kdplug.run import Runner
from kdplug.run import StageRunner
from kdplug.run import TeacherSetup
from kdplug.run import checked_student
from kdplug.run import progress_logger
from kdplug.run import random_state_kept
from kdplug.run import stage_lines
from kdplug.run import teacher_seed
from kdplug.run_files import EXPORT
from kdplug.teacher import TeacherFinetuner
from kdplug.teacher import teacher_fingerprint
from kdplug.training import check_early_stopping
from kdplug.training import check_schedules
from kdplug.training import fit_can_jit_compile
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk
from kdplug_plugins.cmlm_seq2seq.cmlm_masking import cmlm_dataset
from kdplug_plugins.cmlm_seq2seq.cmlm_masking import mask_budget
from kdplug_plugins.cmlm_seq2seq.cmlm_objective import CmlmObjective
from kdplug_plugins.cmlm_seq2seq.masked_token_accuracy import MaskedTokenAccuracy
from kdplug_plugins.cmlm_seq2seq.seq2seq_data import Seq2SeqData
from kdplug_plugins.cmlm_seq2seq.seq2seq_decoder import Seq2SeqDecoder
from kdplug_plugins.cmlm_seq2seq.seq2seq_encoder import Seq2SeqEncoder
from kdplug_plugins.cmlm_seq2seq.seq2seq_generator import Seq2SeqGenerator
from kdplug_plugins.cmlm_seq2seq.seq2seq_length_buckets import Seq2SeqLengthBuckets
from kdplug_plugins.cmlm_seq2seq.summary import summary_markdown
from kdplug_plugins.cmlm_seq2seq.text_metrics import copy_source_scores
from kdplug_plugins.cmlm_seq2seq.text_metrics import corpus_bleu
from kdplug_plugins.cmlm_seq2seq.text_metrics import exact_match
from kdplug_plugins.cmlm_seq2seq.top_k_cache import FORMAT as TOPK_FORMAT
from kdplug_plugins.cmlm_seq2seq.top_k_cache import TopKCache
from kdplug_plugins.cmlm_seq2seq.top_k_extractor import TopKExtractor
from kdplug_plugins.cmlm_seq2seq.top_k_extractor import soft_label_scores

MLE = "mle"
KD = "cmlm_kd"
SAMPLES = 5  # test examples shown in the report
CMLM_FORMAT = 1  # bump when the C-MLM inputs change (a new teacher cache key)


class CmlmSeq2SeqRunner(Runner):
    """Runs a `cmlm-seq2seq` config end to end (`CmlmSeq2SeqMethod.runner`).

    Built on kdplug's pieces: `TeacherSetup` (the teacher loaded and checked
    under the run's strategy), `TeacherFinetuner` with a `CmlmObjective`
    (the C-MLM teacher, cached by content under `teachers/<key>/`), the
    teacher-output cache layout (`TopKCache`, `outputs/<key>/`),
    `StageRunner` (checkpoints, resume, NaN stop, history, schedules, early
    stopping) and `write_run_report`. Steps:

    1. read the (source, target) pairs (`Seq2SeqData`: the config's file,
       or `data` given in Python);
    2. fine-tune the teacher's backbone with a masked-LM head on C-MLM
       (`teacher.finetune`), measure its masked-token accuracy on test
       (random `mask_rate` masks); every draw of this step (the head's
       initial weights, data order, masks) follows `teacher.finetune.seed`,
       the seed of the teacher's cache key, not the run's `seed`;
    3. extract the top-K soft labels of the train and validation splits
       (`TopKExtractor`; cached with `cache.teacher_outputs`) and score them
       against the gold targets: the teacher's masked-token accuracy under
       the extraction's own masks (`soft_label_scores`);
    4. train the students through `StageRunner`, each one stage: with
       `mle_baseline`, `mle` (`L_mle` only) first, then `cmlm_kd`
       (`alpha * L_kd + (1 - alpha) * L_mle`); each starts from the same
       seed and sees the same batches, epoch by epoch;
    5. decode the test sources (greedy or beam), score BLEU and exact
       match, teacher-forced token accuracy and perplexity; score the
       copy-the-source baseline (`copy_source_scores`) the same way;
    6. save the distilled student (`student.keras`), export it as a
       `Seq2SeqGenerator` (`export/`), write `metrics.json`, `summary.md`
       and `loss_curves.png`.

    With `training.length_buckets`, the C-MLM fine-tuning's batches
    (`LengthBuckets`) and the students' (`Seq2SeqLengthBuckets`) hold pairs
    of similar length, each cut to its longest.

    Args:
        method: the configured `CmlmSeq2SeqMethod`.
        context: the run's `kdplug.run.RunContext`.
        data: optional `Seq2SeqData` (a Python dataset) used instead of
            reading `data.path` (whose other `data:` settings still apply).

    Examples:

    ```python
    report = CmlmSeq2SeqRunner(method, context).run()
    report["variants"]["cmlm_kd"]["bleu"], report["variants"]["mle"]["bleu"]
    runner = CmlmSeq2SeqRunner(method, context, data=Seq2SeqData.from_pairs(
        train=pairs[:800], validation=pairs[800:900], test=pairs[900:]))
    ```
    """

    def __init__(self, method, context, data=None):
        super().__init__(method, context)
        self.data = data
        self._arrays = {}  # split -> the student's (features, labels), encoded once

    # ---------------------------------------------------------------- run
    def run(self):
        ctx, cfg = self.context, self.context.config
        with ctx.timers("reading data"):
            data = self._read()
        variants = self._variants()
        with self._teacher_seeded():
            source = self._load_teacher()
            self.check_students(variants)  # before the teacher is fine-tuned
            teacher_info = self._teacher(data, source)
            with ctx.timers("teacher evaluation"):
                teacher_accuracy = self._teacher_accuracy(data)
        soft = {}
        if any(alpha > 0 for _, alpha in variants):
            with ctx.timers("teacher soft labels"):
                soft = {split: self._soft_labels(data, split)
                        for split in ("train", "validation")
                        if data.splits[split] is not None}
        soft_scores = {split: soft_label_scores(ids, self._student_arrays(data, split)[1])
                       for split, (ids, _) in soft.items()}
        val_ds = self._dataset(data, "validation", soft, shuffle=False)
        stages = StageRunner(ctx)
        history, step_history, results, students = {}, {}, {}, {}
        for index, (name, alpha) in enumerate(variants):
            # A new dataset per student: one iterated again reshuffles on
            # from where it stopped, so the second student would see other
            # batches than the first in every epoch.
            train_ds = self._dataset(data, "train", soft, shuffle=True)
            student, hist = self._train(stages, index, name, alpha, train_ds, val_ds)
            history[name], step_history[name] = hist.epochs, hist.steps
            with ctx.timers(f"evaluation {name}"):
                results[name] = self._evaluate(student, data)
            students[name] = student
        main = variants[-1][0]
        report = self._report(data, teacher_info, teacher_accuracy, soft_scores,
                              results, students[main], main)
        report["teacher"]["soft_labels"]["bytes"] = sum(  # as stored: int32 + float16
            int(array.nbytes) for pair in soft.values() for array in pair)
        report["history"], report["step_history"] = history, step_history
        if cfg.export and ctx.is_chief:
            report["export"] = self._export(students[main])
        return self.write_run_report(report, students[main], summary=summary_markdown,
                                     plot=_loss_curves)

    def finetune_teacher(self):
        """Only the C-MLM teacher (fine-tuned or loaded from the cache)."""
        data = self._read()
        with self._teacher_seeded():
            return self._teacher(data, self._load_teacher())

    def check_build(self):
        """`kdplug validate --build`: the teacher loaded with its C-MLM
        model, and `check_students`."""
        self._load_teacher()
        return self.check_students()

    def check_students(self, variants=None):
        """Builds the student and every variant's stage, and drops them:
        what `run()` checks before it fine-tunes the teacher (and `kdplug
        validate --build`). The student kind builds for the teacher's
        vocabulary and the method's lengths, and `training.schedules` and
        `training.early_stopping` name real variants and terms. Returns one
        line per variant (`stage_lines`)."""
        cfg = self.context.config
        stages = [kdplug.Stage(name, self.method.terms(alpha))
                  for name, alpha in variants or self._variants()]
        check_schedules(cfg.training.schedules, stages, cfg.file)
        check_early_stopping(cfg.training.early_stopping, stages, cfg.file)
        with random_state_kept(), self.context.strategy.scope():
            checked_student(self._student, cfg)
        return stage_lines(stages)

    # ------------------------------------------------------------- pieces
    @contextlib.contextmanager
    def _teacher_seeded(self):
        """Python, NumPy and TensorFlow seeded with the teacher's seed
        (`teacher.finetune.seed`, else the run's: `teacher_seed`) for the
        block, then with the run's `seed` again.

        The teacher's draws happen inside: its C-MLM head's initial weights,
        the fine-tuning's data order and masks (`cmlm_dataset`'s seeded
        tf.data ops also read TensorFlow's global seed), the test masks of
        its accuracy. The fine-tuned teacher's cache key has the teacher's
        seed, not the run's, so runs of other seeds sharing one cached
        teacher also share its masking and report one accuracy.
        """
        cfg = self.context.config
        keras.utils.set_random_seed(teacher_seed(cfg))
        try:
            yield
        finally:
            keras.utils.set_random_seed(cfg.seed)

    def _read(self):
        cfg, mcfg = self.context.config, self.method.config
        data = self.data or Seq2SeqData.read(
            cfg.data, mcfg.source_column, mcfg.target_column, cfg.resolve_path,
            cfg.seed)
        self.context.log.info("data: %s (%s)", data.origin, data.describe())
        return data

    def _variants(self):
        """`[(name, alpha)]` in training order, the distilled one last."""
        mcfg = self.method.config
        variants = []
        if mcfg.mle_baseline or mcfg.alpha == 0:
            variants.append((MLE, 0.0))
        if mcfg.alpha > 0:
            variants.append((KD, mcfg.alpha))
        return variants

    def _load_teacher(self):
        """Loads the teacher and builds its C-MLM model (`self.mlm`), not
        fine-tuned; returns the teacher's source."""
        ctx, cfg, mcfg = self.context, self.context.config, self.method.config
        setup = TeacherSetup(ctx)
        teacher, tokenizer, source = setup.load(2)
        self.encoder = Seq2SeqEncoder(tokenizer, mcfg.max_source_length,
                                      mcfg.max_target_length, cfg.data.sequence_length)
        if mcfg.top_k > tokenizer.vocabulary_size():
            raise ConfigError(
                f"above the vocabulary size {tokenizer.vocabulary_size()}",
                cfg.file, "method.top_k", mcfg.top_k)
        self.budget = mask_budget(mcfg.max_target_length, mcfg.mask_rate)
        with ctx.strategy.scope():
            self.mlm = keras_hub.models.BertMaskedLM(teacher.backbone, preprocessor=None,
                                                     name="cmlm_teacher")
        pooler = getattr(teacher.backbone, "pooled_dense", None)
        if pooler is not None:  # the [CLS] pooler gets no gradient from C-MLM
            pooler.trainable = False
        return source

    def _teacher(self, data, source):
        """Fine-tunes the C-MLM model `_load_teacher` built from `source`
        (cached); returns the fine-tuning info."""
        ctx, cfg, mcfg = self.context, self.context.config, self.method.config
        ft = cfg.teacher.finetune
        train = self._cmlm_dataset(data, "train", ft.batch_size, shuffle=True)
        val = self._cmlm_dataset(data, "validation", max(ft.batch_size, EVAL_BATCH_SIZE))
        objective = CmlmObjective({
            "format": CMLM_FORMAT,
            "columns": [mcfg.source_column, mcfg.target_column],
            "mask_rate": mcfg.mask_rate, "mask_budget": self.budget,
            **({"length_buckets": vars(cfg.training.length_buckets)}
               if cfg.training.length_buckets else {}),
            "encoder": self.encoder.fingerprint(),
            # the pairs themselves: a Python dataset has no file to hash
            "pairs": storage.fingerprint([data.splits["train"], data.splits["validation"]]),
        })
        with ctx.timers("teacher fine-tuning"), ctx.strategy.scope():
            info = TeacherFinetuner(cfg, source, objective).run(
                self.mlm, train, val,
                jit_compile=cfg.training.jit_compile and fit_can_jit_compile(ctx.strategy))
        self.teacher_fingerprint = teacher_fingerprint(self.mlm)
        return info

    def _cmlm_dataset(self, data, split, batch_size, shuffle=False):
        if data.splits[split] is None:
            return None
        arrays = self.encoder.teacher_arrays(*data.splits[split])
        return cmlm_dataset(arrays, batch_size, self.encoder.mask_id,
                            self.method.config.mask_rate, self.budget,
                            seed=teacher_seed(self.context.config), shuffle=shuffle,
                            length_buckets=self.context.length_buckets())

    def _teacher_accuracy(self, data):
        """The C-MLM teacher's accuracy on the masked target positions of the
        test split: one fixed draw of random `mask_rate` masks, from the
        teacher's seed (`_teacher_seeded`)."""
        metric = MaskedTokenAccuracy()
        for x, y in self._cmlm_dataset(data, "test", EVAL_BATCH_SIZE):
            metric.update_state(y, self.mlm(x, training=False))
        return float(metric.result())

    def _soft_labels(self, data, split):
        """`(ids, probs)` of a split: from the cache, or extracted."""
        ctx, cfg, mcfg = self.context, self.context.config, self.method.config
        sources, targets = data.splits[split]
        batch_size = cfg.cache.batch_size if cfg.cache else EVAL_BATCH_SIZE
        extractor = TopKExtractor(self.mlm, self.encoder.mask_id,
                                  self.encoder.decoder_length, mcfg.passes,
                                  mcfg.top_k, batch_size)
        extract = lambda: extractor.extract(  # noqa: E731
            self.encoder.teacher_arrays(sources, targets),
            progress=progress_logger(ctx.log, f"soft labels ({split})"))
        if not (cfg.cache and cfg.cache.teacher_outputs):
            return extract()
        cache = TopKCache({
            "format": TOPK_FORMAT, "teacher": self.teacher_fingerprint,
            "encoder": self.encoder.fingerprint(),
            "examples": storage.fingerprint([sources, targets]),
            "passes": mcfg.passes, "top_k": mcfg.top_k,
        })
        loaded = cache.load()
        if loaded is not None:
            ctx.log.info("soft labels (%s): loaded from %s", split, cache.path)
            return loaded
        ctx.log.info("soft labels (%s): %d examples x %d passes, top %d", split,
                     len(sources), mcfg.passes, mcfg.top_k)
        return cache.save(*extract())

    def _student_arrays(self, data, split):
        """The student's `(features, labels)` of a split, encoded once per
        run (shared by every student's dataset and the soft labels' scores;
        the features dict is a copy)."""
        if split not in self._arrays:
            self._arrays[split] = self.encoder.student_arrays(*data.splits[split])
        features, labels = self._arrays[split]
        return dict(features), labels

    def _dataset(self, data, split, soft, shuffle):
        """Student batches `(features, labels)` of a split (None if absent);
        with the soft labels as `teacher/topk_ids`, `teacher/topk_probs`."""
        if data.splits[split] is None:
            return None
        features, labels = self._student_arrays(data, split)
        if split in soft:
            ids, probs = soft[split]
            features[keys.teacher_key(sk.TOPK_IDS)] = ids
            features[keys.teacher_key(sk.TOPK_PROBS)] = probs
        cfg = self.context.config
        ds = tf.data.Dataset.from_tensor_slices((features, labels))
        if shuffle:
            ds = ds.shuffle(len(labels), seed=cfg.seed, reshuffle_each_iteration=True)
        buckets = self.context.length_buckets(Seq2SeqLengthBuckets)
        if buckets is None:
            ds = ds.batch(cfg.training.batch_size)
        else:
            ds = buckets.batch(ds, cfg.training.batch_size, len(labels),
                               shuffle=shuffle, seed=cfg.seed)
        return ds.prefetch(tf.data.AUTOTUNE)

    def _train(self, stages, index, name, alpha, train_ds, val_ds):
        ctx = self.context
        keras.utils.set_random_seed(ctx.config.seed)  # every variant starts alike
        with ctx.strategy.scope():
            student = self._student()
            terms = self.method.terms(alpha)
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        hist = stages.run(index, kdplug.Stage(name, terms), student, None,
                          train_ds, val_ds, metrics=metrics)
        return student, hist

    def _student(self):
        """The configured seq2seq student on the teacher's word pieces."""
        return self.method.build_student(
            None, self.context.student_kind(), self.encoder.tokenizer.vocabulary_size())

    def _evaluate(self, student, data):
        """Test-split decoding (BLEU, exact match) and teacher-forced token
        accuracy and perplexity of one student."""
        mcfg = self.method.config
        sources, targets = data.splits["test"]
        decoder = Seq2SeqDecoder(student, self.encoder.cls_id, self.encoder.sep_id,
                                 self.encoder.pad_id, mcfg.decoding, mcfg.beam_width,
                                 length_penalty=mcfg.length_penalty)
        start = time.perf_counter()
        generated = decoder.generate(
            self.encoder.source_arrays(sources), EVAL_BATCH_SIZE,
            progress=progress_logger(self.context.log, f"decoding ({mcfg.decoding})"))
        decode_s = time.perf_counter() - start
        hypotheses = self.encoder.detokenize(generated)
        references = self.encoder.normalize(targets)
        features, labels = self.encoder.student_arrays(sources, targets)
        correct = nll = counted = 0.0
        for lo in range(0, len(labels), EVAL_BATCH_SIZE):
            x = {k: v[lo:lo + EVAL_BATCH_SIZE] for k, v in features.items()}
            y = labels[lo:lo + EVAL_BATCH_SIZE]
            logits = np.asarray(student(x, training=False), "float32")
            log_q = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
            mask = y >= 0
            gold = np.take_along_axis(log_q, np.maximum(y, 0)[..., None], -1)[..., 0]
            correct += float(((logits.argmax(-1) == y) & mask).sum())
            nll -= float((gold * mask).sum())
            counted += float(mask.sum())
        return {
            "bleu": corpus_bleu(hypotheses, references),
            "exact_match": exact_match(hypotheses, references),
            "token_accuracy": correct / max(counted, 1.0),
            "perplexity": math.exp(nll / max(counted, 1.0)),
            # test split, batches of EVAL_BATCH_SIZE, first-call tracing included
            "decode_sentences_per_s": len(sources) / max(decode_s, 1e-9),
            "params": count_params(student),
            "samples": [{"source": s, "reference": r, "generated": h}
                        for s, r, h in list(zip(sources, references, hypotheses))[:SAMPLES]],
        }

    def _export(self, student):
        folder = self.context.path(EXPORT)
        mcfg = self.method.config
        Seq2SeqGenerator(student, self.encoder.tokenizer, mcfg.decoding,
                         mcfg.beam_width, length_penalty=mcfg.length_penalty).save(folder)
        return {"path": folder, "files": sorted(os.listdir(folder)), "notes": [
            "a sequence-to-sequence student is exported as a text-to-text "
            "generator (Seq2SeqGenerator.load(export).generate([...])); "
            "export.formats measure classifiers and are not written"]}

    # ------------------------------------------------------------- report
    def _report(self, data, teacher_info, teacher_accuracy, soft_scores, results,
                student, main):
        ctx, cfg, mcfg = self.context, self.context.config, self.method.config
        distilled = results[main]
        by_split = lambda name: {split: scores[name]  # noqa: E731
                                 for split, scores in soft_scores.items()}
        return {
            "name": cfg.name,
            "method": cfg.method.name,
            "data": data.origin,
            "task": {
                "source_column": mcfg.source_column,
                "target_column": mcfg.target_column,
                **{f"{split}_examples": len(pair[0]) if pair else 0
                   for split, pair in data.splits.items()},
                "skipped_rows": data.skipped,
            },
            "teacher": {
                # masked-token accuracy of the C-MLM teacher on the test split
                # (random mask_rate masks); also under masked_accuracy
                "accuracy": teacher_accuracy,
                # what its draws (head, data order, masks) follow
                "seed": teacher_seed(cfg),
                # by masking: random mask_rate masks on test; the soft labels'
                # own (every `passes`-th target position per pass) on the
                # splits they are extracted from (top-1 == gold)
                "masked_accuracy": {"test_random_masks": teacher_accuracy,
                                    "soft_label_masks": by_split("accuracy")},
                "params": count_params(self.mlm),
                "finetune": teacher_info,
                "mask_rate": mcfg.mask_rate,
                "soft_labels": {"passes": mcfg.passes, "top_k": mcfg.top_k,
                                "temperature": mcfg.temperature,
                                "temper_student": mcfg.temper_student,
                                # the gold word piece among the K kept
                                "top_k_recall": by_split("top_k_recall")},
            },
            "student": {
                # teacher-forced next-token accuracy on the test split
                "accuracy": distilled["token_accuracy"],
                "bleu": distilled["bleu"],
                "exact_match": distilled["exact_match"],
                "params": count_params(student),
                "kind": cfg.student.name,
                "variant": main,
            },
            "variants": results,
            # no model: the test sources emitted unchanged, scored as the students
            "copy_source": copy_source_scores(*data.splits["test"], self.encoder.normalize),
            "alpha": mcfg.alpha,
            "decoding": {"strategy": mcfg.decoding,
                         "beam_width": mcfg.beam_width if mcfg.decoding == "beam" else 1,
                         "length_penalty": mcfg.length_penalty
                         if mcfg.decoding == "beam" else 0.0},
            "seconds": dict(ctx.timers.seconds),
            "resumed": dict(ctx.timers.resumed),
        }


def _loss_curves(run_dir, report):
    """The plots of a `cmlm-seq2seq` run: every student's loss curves."""
    return {"loss_curves": loss_curves(
        report["history"], os.path.join(run_dir, LOSS_CURVES),
        steps=report.get("step_history"))}
