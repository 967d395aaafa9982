"""Reloading a finished run's teacher, student and data for analysis."""

import dataclasses
import functools
import logging
import os

import numpy as np
import tensorflow as tf
from kdplug.analysis.analyzer import AnalysedModel
from kdplug.analysis.analyzer import Analyzer
from kdplug.analysis.analyzer import class_names
from kdplug.config.loading import parse_analysis
from kdplug.config.schema import to_dict
from kdplug.config.sections import AnalysisConfig
from kdplug.config.sources import resolve_source
from kdplug.data.length_buckets import LengthBuckets
from kdplug.data.readers import IN_MEMORY
from kdplug.data.readers import read_splits
from kdplug.data.student_text_encoder import StudentTextEncoder
from kdplug.data.text_encoder import TextEncoder
from kdplug.data.text_encoder import needs_pair_inputs
from kdplug.data.word_encoder import WordEncoder
from kdplug.data.word_encoder import word_dataset
from kdplug.errors import KdplugError
from kdplug.finished_run import read_run_config
from kdplug.finished_run import student_file
from kdplug.models.keyed_inputs import KeyedInputs
from kdplug.models.saving import load_model
from kdplug.run_files import ANALYSIS
from kdplug.run_files import STUDENT_TOKENIZER
from kdplug.run_files import WORD_VOCABULARY
from kdplug.tasks import get_task
from kdplug.tasks import task_objective
from kdplug.teacher.finetune import TeacherFinetuner
from kdplug.teacher.loading import load_teacher
from kdplug.training.distribution import resolve_jit_compile

log = logging.getLogger(__name__)


@dataclasses.dataclass
class RunModels:
    """A finished run, reloaded: its config, teacher (with the fine-tuned
    weights from the cache), student, encoders and data splits.

    Args:
        run_dir: the run folder.
        config: its `ExperimentConfig` (paths resolved against the config
            file the run was started from).
        teacher, student: the models.
        encoder: the teacher's `TextEncoder`.
        words: the student's `WordEncoder` (word-id students) or None.
        splits: `{"train", "validation", "test"}` `Examples` (None when
            loaded with `read_data=False`).
        teacher_key: what identifies the teacher (its fine-tuning cache key
            or its source), so runs sharing one are probed once (None
            without the teacher).

    Examples:

    ```python
    run = load_run("runs/quickstart")
    run.teacher_model().name, run.student_model().name
    ```
    """

    run_dir: str
    config: object
    teacher: object
    student: object
    encoder: object
    words: object
    splits: dict
    teacher_key: str

    @property
    def name(self):
        return self.config.name

    def dataset(self, examples, batch_size, roles=("teacher", "student")):
        """Batched `(features, labels)` with every input the models in
        `roles` read: the teacher's encoding and, for a student with its own
        (word ids, or its own tokenizer's `student/` keys), the student's.
        A student alone with its own encoding gets only that one: the
        teacher's tokenizer does not run (a byte-level BPE costs seconds to
        trace)."""
        if self.words is None:
            return self.encoder.dataset(examples, batch_size)
        if "teacher" not in roles:
            features = self.words.features(examples)
            return tf.data.Dataset.from_tensor_slices(
                (features, np.asarray(examples.labels))).batch(batch_size)
        return word_dataset(self.encoder, self.words, examples, batch_size)

    def teacher_model(self, name="teacher"):
        return AnalysedModel(name, self.teacher, self.dataset, role="teacher",
                             **self._reading())

    def student_model(self, name=None):
        return AnalysedModel(name or self.name, self.student,
                             functools.partial(self.dataset, roles=("student",)),
                             **self._reading())

    def length_buckets(self):
        """The run's `training.length_buckets` as a `LengthBuckets`, or None
        (its prediction passes read padded batches)."""
        section = self.config.training.length_buckets
        return None if section is None else LengthBuckets(section.window,
                                                          section.multiple)

    def _reading(self):
        """How the run's models read texts: XLA as the run compiled, and its
        length buckets."""
        return {"jit_compile": resolve_jit_compile(self.config.training.jit_compile),
                "length_buckets": self.length_buckets()}


def load_run(run_dir, config_file=None, teacher=None, config=None, read_data=True,
             with_teacher=True):
    """Reloads a finished single-task run from its folder.

    The run's own resolved `config.yaml` is read; its relative paths start
    from the folder of the config file it was started from (recorded in
    `source.json`; `config_file` overrides, e.g. for runs made before that
    file existed). The fine-tuned teacher's weights come from kdplug's
    teacher cache (the run does not store the teacher); a missing entry is
    an error naming the command that restores it. The teacher's head and
    the labels follow the run's task kind (`data.task`).

    Args:
        run_dir: the run folder (`config.yaml`, `student.keras`, or
            `export/student.keras`).
        config_file: the config file the run was started from (optional).
        teacher: `(model, tokenizer, key)` already loaded for another run
            with the same teacher (`analyze_runs` shares it).
        config: the run's config, when the caller already read it.
        read_data: False: the run's data files are neither needed nor read
            (`splits` is None; what `kdplug predict` does).
        with_teacher: False: only the teacher's tokenizer is kept (`teacher`
            is None, the cache is not read), for the student alone.

    Returns:
        A `RunModels`.
    """
    run_dir = os.path.abspath(run_dir)
    config = config or read_run_config(run_dir, config_file)
    task = get_task(config.task, config.data)
    # The fine-tuned teacher's cache key reads the data too.
    keyed = with_teacher and teacher is None and config.teacher.finetune is not None
    for key, value in (config.data.sources().items() if read_data or keyed else ()):
        if value == IN_MEMORY:
            raise KdplugError(
                f"{run_dir}: the run read in-memory data (`Experiment(config, "
                "data=...)`), which a run folder does not keep"
                + ("" if read_data else ", and its fine-tuned teacher is keyed by it")
                + "; the student alone needs no data (`kdplug predict RUN_DIR`, "
                "`kdplug evaluate RUN_DIR --data FILE`)")
        if value.startswith("tfds:"):
            continue
        data_file = config.resolve_path(value)
        if not os.path.exists(data_file):
            why = "" if read_data else " (the fine-tuned teacher's cache key reads it)"
            raise KdplugError(
                f"{run_dir}: the run's data file {value!r} (data.{key}) is not at "
                f"{data_file}{why}; pass the config file the run was started from "
                "(`kdplug analyze RUN_DIR --config FILE`)")
    model, tokenizer, key = teacher or _load_teacher(config, task, with_teacher)
    student = load_model(student_file(run_dir))
    words_path = os.path.join(run_dir, WORD_VOCABULARY)
    words = WordEncoder.load(words_path) if os.path.isfile(words_path) else None
    own_tokenizer = os.path.join(run_dir, STUDENT_TOKENIZER)
    if os.path.isdir(own_tokenizer):  # a student of its own tokenizer (kind: hub)
        words = StudentTextEncoder.load(own_tokenizer, config.data.sequence_length)
        if not isinstance(student, KeyedInputs):  # the shipped export/student.keras
            student = KeyedInputs(student, prefix=words.prefix)
    encoder = TextEncoder(tokenizer, config.data.sequence_length,
                          pair_inputs=needs_pair_inputs(student))
    splits = None
    if read_data:
        splits = read_splits(config.data, config.resolve_path,
                             label_kind=task.label_kind, seed=config.seed)
    return RunModels(run_dir, config, model, student, encoder, words, splits, key)


def _load_teacher(config, task, with_teacher=True):
    """`(teacher, tokenizer, key)` with the run's fine-tuned weights (the
    teacher None without `with_teacher`: only its tokenizer)."""
    teacher, tokenizer, source = load_teacher(
        config.teacher, task.num_outputs(config.data), config.resolve_path,
        **task.head_options())
    if not with_teacher:
        return None, tokenizer, None
    if config.teacher.finetune is None:
        return teacher, tokenizer, _teacher_key(config)
    finetuner = run_finetuner(config, source)
    if not os.path.isfile(finetuner.weights_path):
        raise KdplugError(
            f"the fine-tuned teacher of run {config.name!r} is not in the cache "
            f"({finetuner.cache_dir}); `kdplug finetune-teacher {config.file}` "
            "fine-tunes it again with the same settings (same cache key)")
    teacher.load_weights(finetuner.weights_path)
    log.info("teacher: fine-tuned weights from %s", finetuner.cache_dir)
    return teacher, tokenizer, finetuner.key()


def analyze_runs(run_dirs, output_dir=None, config=None, config_files=None,
                 overrides=None, names=None):
    """What `kdplug analyze` does: analyses each run (its teacher and
    student) into `<run>/analysis/`, and, for several runs, the teacher and
    every student side by side into `output_dir`.

    Runs that share a teacher (same fine-tuning cache key) load and probe it
    once. Settings: `config` (an `AnalysisConfig`), else the first run's
    `analysis:` section, else the defaults. Built probing sets come from the
    first run's training texts (`corpus: train`), so every model is probed
    on the same examples.

    Args:
        run_dirs: run folders.
        output_dir: the comparison folder (default
            `<parent of the first run>/analysis-comparison`; only written for
            several runs).
        config: an `AnalysisConfig` overriding the runs' own.
        config_files: the config file of each run (None entries: from the
            run's `source.json`).
        overrides: `analysis:` data merged over the settings (what the
            command-line options give: `{"probing": {"seeds": [0]},
            "behaviour": False}`), validated like a config section.
        names: each run's student's name in the comparison (default: the
            runs' names).

    Returns:
        `{"runs": {run_dir: analysis.md path}, "comparison": path or None}`.

    Examples:

    ```python
    analyze_runs(["runs/quality/quality-kd-s0", "runs/quality/quality-bilstm-s0"])
    ```
    """
    if not run_dirs:
        raise KdplugError("name at least one run folder")
    config_files = list(config_files or [None] * len(run_dirs))
    teachers, runs = {}, []
    for run_dir, config_file in zip(run_dirs, config_files):
        run_config = read_run_config(os.path.abspath(run_dir), config_file)
        key = _teacher_key(run_config)
        run = load_run(run_dir, teacher=teachers.get(key), config=run_config)
        teachers.setdefault(key, (run.teacher, run.encoder.tokenizer, key))
        runs.append(run)
    config = _merge(config or runs[0].config.analysis or AnalysisConfig(), overrides)
    analyzer = Analyzer(config, base_dir=runs[0].config.base_dir)
    tasks = analyzer.probing_tasks(runs[0].splits["train"].texts)
    split = config.behaviour.split if config.behaviour else "test"
    written = {}
    for run in runs:
        examples = run.splits[split]
        result = analyzer.analyze(run.teacher_model(), [run.student_model()], examples,
                                  tasks, class_names(run.splits.label_map))
        written[run.run_dir] = analyzer.write(
            result, os.path.join(run.run_dir, ANALYSIS), tasks,
            title=f"{run.name}: teacher vs student")
        log.info("analysis: %s", written[run.run_dir])
    comparison = None
    if len(runs) > 1:
        names = _distinct(list(names or [run.name for run in runs]))
        if len({run.teacher_key for run in runs}) > 1:
            log.warning("analysis: the runs have different teachers; the comparison "
                        "shows the first run's")
        output_dir = output_dir or os.path.join(
            os.path.dirname(runs[0].run_dir), "analysis-comparison")
        students = [run.student_model(name) for run, name in zip(runs, names)]
        result = analyzer.analyze(runs[0].teacher_model(), students,
                                  runs[0].splits[split], tasks,
                                  class_names(runs[0].splits.label_map))
        comparison = analyzer.write(result, output_dir, tasks,
                                    title="Teacher and students side by side")
        log.info("analysis: comparison in %s", comparison)
    return {"runs": written, "comparison": comparison}


def _distinct(names):
    """`["a", "a", "b"] -> ["a", "a #2", "b"]`: table and plot names."""
    seen, out = {}, []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _merge(config, overrides):
    """`config` with `overrides` (plain `analysis:` data) applied on top:
    a part set to False is switched off, a non-empty mapping updates that
    part (switching it on), an empty one changes nothing."""
    if not overrides:
        return config
    data = to_dict(config)
    for part, value in overrides.items():
        if value is False:
            data[part] = False
        elif value:
            data[part] = {**(data.get(part) or {}), **value}
    return parse_analysis(data, file="kdplug analyze")


def _teacher_key(config):
    """The fine-tuning cache key of a run's teacher (its source when it is
    not fine-tuned): runs with equal keys have the same teacher."""
    if config.teacher.finetune is None:
        source = resolve_source(config.teacher.source, config.resolve_path)
        return f"source:{source}"
    return run_finetuner(config).key()


def run_finetuner(config, source=None):
    """The `TeacherFinetuner` of a finished run's teacher: the run's task
    objective (`data.task`) and its data, hence the cache key the run
    fine-tuned the teacher under (and `kdplug finetune-teacher` writes).

    Args:
        config: the run's config.
        source: its resolved `teacher.source` (resolved here when None).
    """
    if source is None:
        source = resolve_source(config.teacher.source, config.resolve_path)
    return TeacherFinetuner(config, source, task_objective(config))
