"""The typed sections of an experiment config.

Each dataclass is one YAML section (or one entry of a list section); field
types, declared ranges and defaults are the schema (`__post_init__` checks
what spans several fields), and
`kdplug.config.schema.parse` turns plain YAML data into them with errors that
name the file, the dotted field and the value. Nothing here imports
TensorFlow.
"""

import dataclasses
from typing import Annotated
from typing import List
from typing import Literal
from typing import Optional
from typing import Union

from kdplug.config.ranges import BatchSize
from kdplug.config.ranges import Epochs
from kdplug.config.ranges import Fraction
from kdplug.config.ranges import LearningRate
from kdplug.config.ranges import NonNegativeInt
from kdplug.config.ranges import PositiveInt
from kdplug.config.ranges import Range
from kdplug.config.ranges import WeightDecay
from kdplug.errors import bounded_repr
from kdplug.errors import did_you_mean

# Ranges shared by several sections (kdplug.config.ranges).


@dataclasses.dataclass
class DataConfig:
    """Where the examples come from and how they are tokenised.

    Exactly one of two forms (docs/configs.md, "data"):

    - `path`: one source holding every split: a TSV / CSV / JSONL / Parquet
      file whose `split_column` names each row's split, a Hugging Face
      `datasets` folder written by `save_to_disk` (a `DatasetDict`, whose
      splits `train_split` / `validation_split` / `test_split` name, or a
      `Dataset` with a split column), or `tfds:<name>`.
    - `train`, `dev` (also written `validation`), `test`: one source per
      split, each a file or a saved `Dataset` folder; `dev` and `test` are
      optional.

    Labels are integer class ids `0..num_classes-1`, or names: listed in
    `label_names` (their order gives the ids, and `num_classes` follows from
    their number), else the sorted names found in the train split (as many
    as `num_classes`). A run without a test split is evaluated on the
    validation split (its report says so).
    """

    # What a label is (docs/tasks.md): `classification` (a class id or name),
    # `regression` (a number), `multi_label` (a list of class names or ids),
    # `token_classification` (one tag per word), `extractive_qa` (an answer
    # span in a context); null: the method's first task kind (`Method.task_kinds`; classification for every built-in
    # method but cmlm-seq2seq).
    task: Optional[Literal["classification", "regression", "multi_label",
                           "token_classification", "extractive_qa"]] = None
    path: Optional[str] = None
    train: Optional[str] = None
    dev: Optional[str] = None
    test: Optional[str] = None
    format: Literal["auto", "tsv", "csv", "jsonl", "parquet", "hf_dataset"] = "auto"
    # TSV / CSV: `csv`, a field that starts with " is quoted (quotes inside
    # doubled) and may hold tabs, commas and line breaks; `none`: quotes are text.
    quoting: Literal["csv", "none"] = "csv"
    text_column: str = "text"
    text_pair_column: Optional[str] = None
    label_column: str = "label"
    # Class names, in class-id order; null: ids, or the train split's names.
    label_names: Optional[List[str]] = None
    # multi_label in TSV / CSV: the separator between a row's labels
    # (`pos|funny`); JSONL, Parquet and datasets hold lists.
    label_separator: str = "|"
    split_column: Optional[str] = "split"
    train_split: str = "train"
    validation_split: Optional[str] = "dev"
    test_split: Optional[str] = "test"
    # null: the number of label_names, else 2.
    num_classes: Optional[Annotated[int, Range(2, 1_000_000)]] = None
    sequence_length: Annotated[int, Range(8, 4096)] = 64
    max_train_examples: Optional[PositiveInt] = None
    bad_rows: Literal["error", "skip"] = "error"
    # extractive_qa: context tokens two consecutive windows of a long context
    # share (Hugging Face's `stride`); null: a quarter of sequence_length.
    window_overlap: Optional[NonNegativeInt] = None
    # extractive_qa: the longest answer decoded, in tokens (run_squad's 30).
    max_answer_length: PositiveInt = 30

    # The per-split keys and the split each one holds (`read_splits`' names).
    SPLIT_FILES = {"train": "train", "dev": "validation", "test": "test"}
    # Fields added with per-split sources and class names (issue #17): left
    # out of cache keys and run settings while at these defaults, so cache
    # entries and run folders made before them stay valid.
    ADDED_DEFAULTS = {"train": None, "dev": None, "test": None, "quoting": "csv",
                      "label_names": None, "task": None, "label_separator": "|",
                      "window_overlap": None, "max_answer_length": 30}

    def __post_init__(self):
        self._check_sources()
        others = {self.validation_split, self.test_split}
        if self.train_split in others:
            raise ValueError(
                f"train_split {bounded_repr(self.train_split)} is also the validation or "
                "test split; evaluation must not read the training rows")
        self._check_label_names()
        if not self.label_separator:
            raise ValueError("label_separator must not be empty")

    def _check_sources(self):
        files = [key for key in self.SPLIT_FILES if getattr(self, key) is not None]
        if self.path is not None and files:
            raise ValueError(
                f"both path and {', '.join(files)} are set; give either path (one "
                "source with every split) or train/dev/test (one source per split)")
        if self.path is None and not files:
            raise ValueError(
                "no data: set path (one file with a split column, a saved "
                "datasets folder or tfds:<name>) or train (with dev and test: "
                "one file per split)")
        if self.path is None and self.train is None:
            raise ValueError(f"{files[0]} is set but train is not; the per-split "
                             "form needs train (dev and test are optional)")
        if self.path is not None and not self.path.strip():
            raise ValueError("path must name a data file (or tfds:<name>)")
        for key in files:
            value = getattr(self, key)
            if not value.strip():
                raise ValueError(f"{key} must name a data file or a saved dataset folder")
            if value.startswith("tfds:"):
                raise ValueError(
                    f"{key}: {bounded_repr(value)}: a TFDS dataset goes in path, its splits "
                    "in train_split, validation_split and test_split")

    def _check_label_names(self):
        names = self.label_names
        if names is None:
            if self.num_classes is None:
                self.num_classes = 2
            return
        if len(names) < 2:
            raise ValueError(f"label_names {names} must list at least two classes")
        if any(not name.strip() for name in names):
            raise ValueError(f"label_names {names} holds an empty name")
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"label_names lists {', '.join(map(repr, twice))} more "
                             "than once; each name is one class")
        if self.num_classes is None:
            self.num_classes = len(names)
        elif self.num_classes != len(names):
            raise ValueError(
                f"label_names lists {len(names)} classes and num_classes is "
                f"{self.num_classes}; leave num_classes out (it follows from "
                "label_names) or make them agree")

    def sources(self):
        """`{key: value}` of the data sources set: `{"path": ...}`, or the
        per-split keys (`train`, and `dev` / `test` when set)."""
        if self.path is not None:
            return {"path": self.path}
        return {key: getattr(self, key) for key in self.SPLIT_FILES
                if getattr(self, key) is not None}

    def key_fields(self):
        """The fields as a dict, without those at their `ADDED_DEFAULTS`
        (what cache keys and run settings hash)."""
        return {k: v for k, v in vars(self).items()
                if not (k in self.ADDED_DEFAULTS and v == self.ADDED_DEFAULTS[k])}

    @property
    def has_validation(self):
        """Whether the data names a validation split."""
        return (self.validation_split is not None if self.path is not None
                else self.dev is not None)

    @property
    def has_test(self):
        """Whether the data names a test split."""
        return (self.test_split is not None if self.path is not None
                else self.test is not None)


@dataclasses.dataclass
class EarlyStoppingConfig:
    """`early_stopping:`: keep the epoch with the best validation value and
    stop when it has not improved for `patience` epochs (`epochs` is then a
    maximum). The best epoch's weights are restored at the end, so they are
    what is evaluated and exported.

    `monitor` is a value logged on the validation split (`val_accuracy`,
    `val_loss`, `val_<term>`); `mode: auto` minimises values whose name holds
    `loss` (or `mse`) and maximises the others. `patience: null` never stops
    early (only the best epoch is kept). `stages` (students only) names the
    method's stages it applies to; default the last stage, the one that
    trains the prediction head (an intermediate-layer stage's accuracy is not
    meaningful)."""

    monitor: str = "val_accuracy"
    mode: Literal["auto", "max", "min"] = "auto"
    patience: Optional[PositiveInt] = 2
    min_delta: Annotated[float, Range(0.0, 1e9)] = 0.0
    stages: Optional[List[str]] = None

    def __post_init__(self):
        if not self.monitor.startswith("val_"):
            raise ValueError(
                f"monitor {bounded_repr(self.monitor)} is not a validation value; "
                f"early stopping watches the validation split (did you mean "
                f"{bounded_repr('val_' + self.monitor)}?)")

    @property
    def maximize(self):
        if self.mode != "auto":
            return self.mode == "max"
        return not any(word in self.monitor for word in ("loss", "mse", "error"))


@dataclasses.dataclass
class EvaluationConfig:
    """`evaluation:`: the task metrics reported for teacher and student on the
    test split (`metrics.json`, `summary.md`) and, beyond accuracy, logged on
    the validation split every epoch as `val_<metric>` (history,
    TensorBoard, `training.early_stopping.monitor`).

    Args:
        metrics: metric names (`METRICS`, by task kind); null: the task
            kind's defaults (`DEFAULTS`; classification: `[accuracy]`).
            A metric of another task kind is refused when the config is
            loaded (the method's tasks say which kinds it has).
        latency_runs: timed forward passes behind each latency in the
            report (teacher and student at batch 1, each export format
            and `export.latency_batch_sizes` entry), after a few untimed
            ones; the median, min and max are reported. Fewer runs give
            a noisier median sooner (the test suite's toy runs take 2).

    Examples:

    ```python
    EvaluationConfig(["accuracy", "f1_macro"]).for_kind("classification")
    # ['accuracy', 'f1_macro']
    ```
    """

    # Every metric, by the task kinds it measures (docs/configs.md, "evaluation";
    # F1 is a metric of single- and multi-label classification alike).
    METRICS = {"classification": ("accuracy", "f1_macro", "f1_micro", "mcc"),
               "regression": ("pearson", "spearman", "mse"),
               "multi_label": ("f1_micro", "f1_macro", "exact_match"),
               "token_classification": ("entity_f1", "token_accuracy"),
               "extractive_qa": ("f1", "exact_match", "has_answer_f1",
                                 "no_answer_f1", "best_f1")}
    DEFAULTS = {"classification": ("accuracy",),
                "regression": ("pearson", "spearman", "mse"),
                "multi_label": ("f1_micro", "f1_macro"),
                "token_classification": ("entity_f1", "token_accuracy"),
                "extractive_qa": ("f1", "exact_match")}

    metrics: Optional[List[str]] = None
    latency_runs: Annotated[int, Range(1, 100_000)] = 30

    def __post_init__(self):
        if self.metrics is None:
            return
        if not self.metrics:
            raise ValueError("metrics must list at least one metric, or be null "
                             "(the task kind's defaults)")
        for name in self.metrics:
            problem = self.problem(name)
            if problem:
                raise ValueError(problem)
        if len(set(self.metrics)) != len(self.metrics):
            raise ValueError("metrics lists a metric twice")

    @classmethod
    def problem(cls, name, kinds=None):
        """Why `name` cannot be a metric of tasks of `kinds` (None: of any
        task kind kdplug trains), or None when it can."""
        known = list(dict.fromkeys(
            metric for names in cls.METRICS.values() for metric in names))
        if name not in known:
            return (f"unknown metric{did_you_mean(name, known)}; known: "
                    f"{', '.join(known)}")
        trained = [k for k in cls.DEFAULTS if kinds is None or k in kinds]
        if not set(cls.kinds_of(name)) & set(trained):
            has = "; ".join(f"{k} tasks have {', '.join(cls.METRICS[k])}"
                            for k in trained)
            return (f"{name} is a metric of {' and '.join(cls.kinds_of(name))} "
                    f"tasks, and this run's tasks are {' and '.join(trained)}; {has}")
        return None

    @classmethod
    def kinds_of(cls, name):
        """The task kinds a metric measures (`["classification", ...]`)."""
        return [kind for kind, names in cls.METRICS.items() if name in names]

    def for_kind(self, kind):
        """The configured metrics of one task kind (its defaults when
        `metrics` is null), in the configured order."""
        if self.metrics is None:
            return list(self.DEFAULTS[kind])
        return [name for name in self.metrics if name in self.METRICS[kind]]


@dataclasses.dataclass
class FinetuneConfig:
    """Fine-tuning the teacher on the task before distillation (cached).

    With `early_stopping`, `epochs` is the most the teacher trains (the
    best epoch on the validation split is kept). `seed` (default: the run's
    `seed`) makes the teacher independent of the run's seed: runs with
    seeds 0, 1, 2 and `finetune.seed: 0` share one fine-tuned teacher, and
    only the students' draws vary."""

    epochs: Epochs = 1
    batch_size: BatchSize = 32
    learning_rate: LearningRate = 5e-5
    warmup_ratio: Fraction = 0.1
    cache_dir: Optional[str] = None
    early_stopping: Optional[EarlyStoppingConfig] = None
    seed: Optional[NonNegativeInt] = None

    def __post_init__(self):
        if self.early_stopping is not None and self.early_stopping.stages:
            raise ValueError("early_stopping.stages names a student's stages; the "
                             "teacher's fine-tuning has one")


@dataclasses.dataclass
class TeacherPipelineConfig:
    """`teacher.pipeline:`: run the online teacher in the input pipeline
    (`kdplug.teacher.TeacherPipeline`) instead of the train step.

    `pipeline: true` means every default below."""

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    trim_padding: bool = True
    length_chunks: Annotated[int, Range(1, 64)] = 4
    jit_compile: Optional[bool] = None


@dataclasses.dataclass
class TeacherConfig:
    """The teacher: a local Hugging Face BERT folder, `package:<pkg>/<dir>`,
    a keras-hub preset name, or a `.keras` file.

    `pooling` is what its sentence head reads of the last layer (and so the
    heads of the students built from it: `truncated`, `narrow`,
    `bottleneck`): `auto` (the default: what the checkpoint was trained
    with, its sentence-transformers `1_Pooling/config.json`, `cls` where
    there is none; `kdplug.teacher.pooling`), `cls` (the [CLS] vector) or
    `mean` (the mean over the real, non-padding tokens)."""

    source: str
    tokenizer: Optional[str] = None
    finetune: Optional[FinetuneConfig] = None
    dropout: Fraction = 0.1
    pipeline: Optional[TeacherPipelineConfig] = None
    pooling: Literal["cls", "mean", "auto"] = "auto"


@dataclasses.dataclass
class ScheduleConfig:
    """One entry of `training.schedules:` (see docs/configs.md, "schedules").

    Sets the scalar `variable` of the loss term named `term` before every
    training step of every stage that has that term (or only of the stages
    listed in `stages`). Each stage has its own optimizer, so the step count
    (and the schedule) starts again at 0 in each stage.

    Args:
        term: the term's name as in the logs (`soft_ce`, `hard_ce`,
            `patient_cls`, ...).
        start: the value at (and before) `start_step`.
        kind: `constant`, `linear` or `cosine`.
        end: the value after `start_step + steps`; required for `linear`
            and `cosine`.
        steps: optimizer steps from `start` to `end`; null: from
            `start_step` to the end of the stage.
        start_step: the step (within the stage) at which the schedule starts.
        variable: `weight` or another scalar variable of the term, e.g.
            `temperature` for `soft_ce`.
        stages: only these stages (by name); null: every stage with the term.
    """

    term: str
    start: float
    kind: Literal["constant", "linear", "cosine"] = "linear"
    end: Optional[float] = None
    steps: Optional[PositiveInt] = None
    start_step: NonNegativeInt = 0
    variable: str = "weight"
    stages: Optional[List[str]] = None

    def __post_init__(self):
        if not self.term:
            raise ValueError("term must name a loss term")
        if not self.variable:
            raise ValueError("variable must name a scalar variable of the term")
        if self.kind != "constant" and self.end is None:
            raise ValueError(f"end is required for kind {self.kind!r}")
        if self.variable == "temperature":
            for name in ("start", "end"):
                value = getattr(self, name)
                if value is not None and value <= 0:
                    raise ValueError(f"a temperature must be > 0, got {name}: {value}")
        if self.stages is not None and not self.stages:
            raise ValueError("stages must list at least one stage, or be null")


@dataclasses.dataclass
class LengthBucketsConfig:
    """`training.length_buckets:`: the student's training batches, the
    teacher's fine-tuning batches and the teacher-output precompute's hold
    sentences of similar length, each cut to its longest one
    (`kdplug.data.length_buckets.LengthBuckets`; the prediction passes of
    the test and validation metrics, the analysis and `kdplug predict` /
    `evaluate` read their split sorted by length, the outputs back in its
    order, and Keras' validation pass of every stage and of the teacher's
    fine-tuning (`val_loss`, `val_accuracy`) its batches sorted by length;
    latency and exports stay padded;
    `cmlm-seq2seq` buckets its C-MLM teacher's fine-tuning and its students'
    source/target pairs the same way).
    `length_buckets: true` means every default below; `false` / null (the
    default): every batch padded to `data.sequence_length`.

    Args:
        window: batches per sorting window: `window * batch_size` shuffled
            examples are sorted by length and cut into batches, whose order
            is shuffled. 1: the plain batches, only trimmed.
        multiple: trimmed lengths are rounded up to a multiple of this (an
            XLA-compiled step compiles one shape per length).
    """

    window: Annotated[int, Range(1, 4096)] = 16
    multiple: Annotated[int, Range(1, 4096)] = 8


@dataclasses.dataclass
class TrainingConfig:
    """Optimisation of the student (every stage unless it overrides)."""

    epochs: Epochs = 3
    batch_size: BatchSize = 32
    learning_rate: LearningRate = 1e-4
    weight_decay: WeightDecay = 0.01
    warmup_ratio: Fraction = 0.1
    optimizer: Literal["adamw", "adam", "sgd"] = "adamw"
    # XLA for the train and predict steps; "auto" (Keras' own default): on
    # where the run has a GPU or TPU, off on CPUs, where it pays no faster
    # step and costs a compilation per input shape (bench/length_buckets.py).
    jit_compile: Union[bool, Literal["auto"]] = "auto"
    strategy: Literal["default", "one_device", "mirrored", "multi_worker",
                      "tpu"] = "default"
    steps_per_epoch: Optional[PositiveInt] = None
    verbose: Literal[0, 1, 2, "auto"] = "auto"
    # Keras dtype policy while the run builds and trains (distribution.py);
    # auto: mixed_bfloat16 where the machine computes bfloat16 natively.
    mixed_precision: Optional[Literal["auto", "mixed_float16", "mixed_bfloat16"]] = None
    # Loss-term weight / temperature schedules, every stage (term_schedule.py).
    schedules: List[ScheduleConfig] = dataclasses.field(default_factory=list)
    # Batches of similar lengths, trimmed (data/length_buckets.py); null: padded.
    length_buckets: Optional[LengthBucketsConfig] = None
    # Keep the best epoch on the validation split, stop when it stalls.
    early_stopping: Optional[EarlyStoppingConfig] = None


@dataclasses.dataclass
class CacheConfig:
    """`cache:`: reuse teacher outputs and augmented transfer sets on disk.

    `cache: true` means every default below."""

    teacher_outputs: bool = True
    transfer_set: bool = True
    dtype: Literal["float16", "float32"] = "float16"
    shard_size: Annotated[int, Range(1, 1_000_000)] = 2048
    batch_size: BatchSize = 64
    # Largest teacher-output entry to write, in GiB: above it the teacher
    # runs online (hidden states and attention maps of a large transfer set).
    disk_budget_gb: Annotated[float, Range(0.0, 1e6, low_open=True)] = 20.0


@dataclasses.dataclass
class ExportConfig:
    """`export:`: the student formats written under `runs/<name>/export/` and
    measured (size, batch-1/batch-32 CPU latency, test accuracy). Only the
    formats asked for are written: the default is `keras` alone (the
    student, once); `saved_model`, `tflite_float32`, `tflite_int8` and
    `keras_hub_preset` (a keras-hub preset folder with the tokenizer,
    loadable without kdplug) are added by naming them (docs/export.md)."""

    formats: List[Literal["keras", "saved_model", "tflite_float32",
                          "tflite_int8", "keras_hub_preset"]] = dataclasses.field(
        default_factory=lambda: ["keras"])
    latency_batch_sizes: List[BatchSize] = dataclasses.field(default_factory=lambda: [1, 32])


@dataclasses.dataclass
class AugmentEntry:
    """One validated `augment:` entry: the augmenter's registered name, `n`
    samples per original example, and its typed `Config` (paths already
    resolved relative to the config file). The augmenter itself is built by
    the runner (`kdplug.data.transfer_set.augment_steps`), so a config holds
    data only."""

    name: str
    n: int
    config: object


@dataclasses.dataclass
class ProbingConfig:
    """`analysis.probing:`: per-layer probes of teacher and students
    (docs/analysis.md, "Probing").

    Args:
        tasks: probing task names (`kdplug.analysis.probing.BUILDERS`) or
            SentEval-format files (`split<TAB>label<TAB>sentence`); null:
            the surface tasks, plus the syntactic ones when a spaCy English
            pipeline is installed (`pip install "kdplug[spacy]"`).
        corpus: the sentences the built tasks are made from: `train` (the
            run's training texts) or a text file, one sentence per line.
        max_examples: at most this many examples per built task (train, dev
            and test together), sampled by class.
        probe: `logistic` (logistic regression) or `mlp` (one hidden layer).
        max_iter: the probe's training budget (iterations), fixed.
        seeds: one probe per seed; the table shows mean and spread.
        train_fraction: each seed's probe fits on this share of the
            training part (a seeded, stratified subsample): the spread over
            seeds then says how much a result depends on the sample (a
            logistic probe is otherwise deterministic).
        poolings: sentence vectors of a transformer layer: `cls` (the [CLS]
            position) and/or `mean` (mean over the unpadded positions).
        batch_size: batch size of the frozen models' forward passes.
    """

    tasks: Optional[List[str]] = None
    corpus: str = "train"
    max_examples: Annotated[int, Range(20, 10_000_000)] = 2000
    probe: Literal["logistic", "mlp"] = "logistic"
    max_iter: Annotated[int, Range(1, 100_000)] = 200
    seeds: List[Annotated[int, Range(0, 2**32 - 1)]] = dataclasses.field(
        default_factory=lambda: [0, 1, 2])
    train_fraction: Annotated[float, Range(0, 1, low_open=True)] = 0.9
    poolings: List[Literal["cls", "mean"]] = dataclasses.field(
        default_factory=lambda: ["cls", "mean"])
    batch_size: BatchSize = 64

    def __post_init__(self):
        if self.tasks is not None and not self.tasks:
            raise ValueError("tasks must list at least one task, or be null")
        if not self.seeds:
            raise ValueError("seeds must list at least one seed")
        if not self.poolings:
            raise ValueError("poolings must list cls and/or mean")
        if not self.corpus.strip():
            raise ValueError("corpus must be `train` or a text file")


@dataclasses.dataclass
class BehaviourConfig:
    """`analysis.behaviour:`: teacher vs student on a labelled split
    (docs/analysis.md, "Behaviour").

    Args:
        split: the split compared, `test` or `validation`.
        calibration_bins: equal-width confidence bins of the expected
            calibration error and the reliability diagram.
        top_n: how many of the most disagreed-on examples are listed.
    """

    split: Literal["test", "validation"] = "test"
    calibration_bins: Annotated[int, Range(2, 100)] = 10
    top_n: Annotated[int, Range(0, 10_000)] = 10


@dataclasses.dataclass
class AnalysisConfig:
    """`analysis:`: what `kdplug analyze` (and `kdplug run`, at its end)
    writes into `<run>/analysis/`. `analysis: true` means every default;
    `probing: false` or `behaviour: false` leaves that part out."""

    probing: Optional[ProbingConfig] = dataclasses.field(default_factory=ProbingConfig)
    behaviour: Optional[BehaviourConfig] = dataclasses.field(
        default_factory=BehaviourConfig)

    def __post_init__(self):
        if self.probing is None and self.behaviour is None:
            raise ValueError("probing and behaviour are both off: there is "
                             "nothing to analyse (drop the analysis section)")
