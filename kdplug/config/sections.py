"""The typed sections of an experiment config.

Each dataclass is one YAML section (or one entry of a list section); field
types and defaults are the schema, `__post_init__` checks ranges, and
`kdplug.config.schema.parse` turns plain YAML data into them with errors that
name the file, the dotted field and the value. Nothing here imports
TensorFlow.
"""

import dataclasses
from typing import List
from typing import Literal
from typing import Optional


@dataclasses.dataclass
class DataConfig:
    """Where the examples come from and how they are tokenised."""

    path: str
    format: Literal["auto", "tsv", "csv", "jsonl"] = "auto"
    text_column: str = "text"
    text_pair_column: Optional[str] = None
    label_column: str = "label"
    split_column: Optional[str] = "split"
    train_split: str = "train"
    validation_split: Optional[str] = "dev"
    test_split: str = "test"
    num_classes: int = 2
    sequence_length: int = 64
    max_train_examples: Optional[int] = None
    bad_rows: Literal["error", "skip"] = "error"

    def __post_init__(self):
        if self.num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {self.num_classes}")
        if not 8 <= self.sequence_length <= 4096:
            raise ValueError(
                f"sequence_length must be in [8, 4096], got {self.sequence_length}"
            )


@dataclasses.dataclass
class FinetuneConfig:
    """Fine-tuning the teacher on the task before distillation (cached)."""

    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    cache_dir: Optional[str] = None


@dataclasses.dataclass
class TeacherPipelineConfig:
    """`teacher.pipeline:`: run the online teacher in the input pipeline
    (`kdplug.teacher.TeacherPipeline`) instead of the train step.

    `pipeline: true` means every default below."""

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    trim_padding: bool = True
    length_chunks: int = 4
    jit_compile: Optional[bool] = None

    def __post_init__(self):
        if self.length_chunks < 1:
            raise ValueError(f"length_chunks must be >= 1, got {self.length_chunks}")


@dataclasses.dataclass
class TeacherConfig:
    """The teacher: a local Hugging Face BERT folder, `package:<pkg>/<dir>`,
    a keras-hub preset name, or a `.keras` file."""

    source: str
    tokenizer: Optional[str] = None
    finetune: Optional[FinetuneConfig] = None
    dropout: float = 0.1
    pipeline: Optional[TeacherPipelineConfig] = None


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
    steps: Optional[int] = None
    start_step: int = 0
    variable: str = "weight"
    stages: Optional[List[str]] = None

    def __post_init__(self):
        if not self.term:
            raise ValueError("term must name a loss term")
        if not self.variable:
            raise ValueError("variable must name a scalar variable of the term")
        if self.kind != "constant" and self.end is None:
            raise ValueError(f"end is required for kind {self.kind!r}")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"steps must be >= 1 or null, got {self.steps}")
        if self.start_step < 0:
            raise ValueError(f"start_step must be >= 0, got {self.start_step}")
        if self.variable == "temperature":
            for name in ("start", "end"):
                value = getattr(self, name)
                if value is not None and value <= 0:
                    raise ValueError(f"a temperature must be > 0, got {name}: {value}")
        if self.stages is not None and not self.stages:
            raise ValueError("stages must list at least one stage, or be null")


@dataclasses.dataclass
class TrainingConfig:
    """Optimisation of the student (every stage unless it overrides)."""

    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 1e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    optimizer: Literal["adamw", "adam", "sgd"] = "adamw"
    jit_compile: bool = True
    strategy: Literal["default", "one_device", "mirrored", "multi_worker",
                      "tpu"] = "default"
    steps_per_epoch: Optional[int] = None
    verbose: Literal[0, 1, 2, "auto"] = "auto"
    # Keras dtype policy while the run builds and trains (strategy.py).
    mixed_precision: Optional[Literal["mixed_float16", "mixed_bfloat16"]] = None
    # Loss-term weight / temperature schedules, every stage (term_schedule.py).
    schedules: List[ScheduleConfig] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


@dataclasses.dataclass
class CacheConfig:
    """`cache:`: reuse teacher outputs and augmented transfer sets on disk.

    `cache: true` means every default below."""

    teacher_outputs: bool = True
    transfer_set: bool = True
    dtype: Literal["float16", "float32"] = "float16"
    shard_size: int = 2048
    batch_size: int = 64


@dataclasses.dataclass
class ExportConfig:
    """`export:`: the student formats written under `runs/<name>/export/` and
    measured (size, batch-1/batch-32 CPU latency, test accuracy)."""

    formats: List[Literal["keras", "saved_model", "tflite_float32",
                          "tflite_int8"]] = dataclasses.field(
        default_factory=lambda: ["keras", "saved_model", "tflite_float32",
                                 "tflite_int8"])
    latency_batch_sizes: List[int] = dataclasses.field(default_factory=lambda: [1, 32])


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
