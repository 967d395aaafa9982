"""The experiment config: schema, loading and validation.

Configs are data: YAML read with `yaml.safe_load`, validated into the
dataclasses below. The `method:` and `student:` sections are validated
against the `Config` dataclass of the plugin they name.

Examples:

```python
config = load_config("configs/quickstart.yaml")
config.method.name, config.method_config.temperature
```
"""

import dataclasses
import os
from typing import List
from typing import Literal
from typing import Optional
from typing import Union

import yaml

from kdplug.errors import ConfigError
from kdplug.schema import parse
from kdplug.schema import to_dict
from kdplug.term_schedule import ScheduleConfig
from kdplug.transfer_set import augmenters_from_config


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
    (`kdplug.teacher_pipeline.TeacherPipeline`) instead of the train step.

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
class PluginSection:
    """`method:` / `student:`: a plugin name plus that plugin's options."""

    name: str
    options: dict


@dataclasses.dataclass
class ExperimentConfig:
    name: str
    data: DataConfig
    teacher: TeacherConfig
    method: PluginSection
    student: PluginSection
    training: TrainingConfig
    method_config: object
    student_config: object
    seed: int = 0
    output_dir: str = "runs/{name}"
    file: Optional[str] = None
    augment: list = dataclasses.field(default_factory=list)
    augment_steps: list = dataclasses.field(default_factory=list)
    cache: Optional[CacheConfig] = None
    export: Optional[ExportConfig] = dataclasses.field(default_factory=ExportConfig)

    @property
    def base_dir(self):
        return os.path.dirname(os.path.abspath(self.file)) if self.file else os.getcwd()

    def resolve_path(self, path):
        """A path from the config, relative to the config file's folder."""
        path = os.path.expanduser(path)
        return path if os.path.isabs(path) else os.path.join(self.base_dir, path)

    def run_dir(self):
        return os.path.abspath(self.output_dir.format(name=self.name))

    def to_dict(self):
        return {
            "name": self.name,
            "seed": self.seed,
            "output_dir": self.output_dir,
            "data": to_dict(self.data),
            "teacher": to_dict(self.teacher),
            "method": {"name": self.method.name, **to_dict(self.method_config)},
            "student": {"kind": self.student.name, **to_dict(self.student_config)},
            "training": to_dict(self.training),
            "augment": self.augment,
            "cache": to_dict(self.cache) if self.cache else False,
            "export": to_dict(self.export) if self.export else False,
        }


@dataclasses.dataclass
class _Top:
    name: str
    data: dict
    teacher: dict
    method: dict
    student: Optional[dict] = None
    training: Optional[dict] = None
    seed: int = 0
    output_dir: str = "runs/{name}"
    augment: Optional[list] = None
    cache: Union[bool, dict, None] = None
    export: Union[bool, dict] = True


def load_config(path, plugin_manager=None):
    """Reads and validates a YAML experiment config file."""
    if not os.path.isfile(path):
        raise ConfigError("config file not found", file=path)
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {e}", file=path) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text: {e}", file=path) from None
    return config_from_dict(data, file=path, plugin_manager=plugin_manager)


def config_from_dict(data, file=None, plugin_manager=None):
    """Validates a config document (already parsed YAML)."""
    if plugin_manager is None:
        from kdplug.plugins import get_plugin_manager

        plugin_manager = get_plugin_manager()
    if not isinstance(data, dict):
        raise ConfigError("a config must be a mapping of sections", file, None, data)
    top = parse(_Top, data, "", file)
    data_cfg = parse(DataConfig, top.data, "data", file)
    teacher_data = top.teacher
    pipeline = None
    if isinstance(teacher_data, dict) and "pipeline" in teacher_data:
        teacher_data = dict(teacher_data)
        pipeline = _switchable(TeacherPipelineConfig, teacher_data.pop("pipeline"),
                               "teacher.pipeline", file)
    teacher = parse(TeacherConfig, teacher_data, "teacher", file)
    teacher.pipeline = pipeline
    training = parse(TrainingConfig, top.training, "training", file)

    method_name, method_opts = _split_plugin(top.method, "method", "name", file)
    method_cls = _lookup(plugin_manager.methods, method_name, "method.name", file)
    method_config = parse(method_cls.Config, method_opts, "method", file)

    student_data = dict(method_cls.default_student)
    if top.student is not None:
        if not isinstance(top.student, dict):
            raise ConfigError("expected a mapping", file, "student", top.student)
        if "kind" in top.student and top.student["kind"] != student_data.get("kind"):
            student_data = {}
        student_data.update(top.student)
    student_kind, student_opts = _split_plugin(student_data, "student", "kind", file)
    student_cls = _lookup(plugin_manager.students, student_kind, "student.kind", file)
    student_config = parse(student_cls.Config, student_opts, "student", file)
    cache = _switchable(CacheConfig, top.cache, "cache", file)
    export = _switchable(ExportConfig, top.export, "export", file)
    config = ExperimentConfig(
        name=top.name,
        data=data_cfg,
        teacher=teacher,
        method=PluginSection(method_name, method_opts),
        student=PluginSection(student_kind, student_opts),
        training=training,
        method_config=method_config,
        student_config=student_config,
        seed=top.seed,
        output_dir=top.output_dir,
        file=file,
        augment=top.augment or [],
        cache=cache,
        export=export,
    )
    config.augment_steps = augmenters_from_config(
        top.augment, plugin_manager.augmenters, file,
        resolve_path=config.resolve_path,
    )
    check = getattr(method_cls, "check_config", None)
    if callable(check):  # checks across sections (a Method's or a duck-typed plugin's)
        check(config)
    return config


def _switchable(cls, value, path, file):
    """A section written as `true` (defaults), a mapping, or `false`/absent."""
    if value is None or value is False:
        return None
    return parse(cls, {} if value is True else value, path, file)


def _split_plugin(section, path, key, file):
    if not isinstance(section, dict):
        raise ConfigError("expected a mapping", file, path, section)
    if key not in section:
        raise ConfigError("required field is missing", file, f"{path}.{key}")
    name = section[key]
    if not isinstance(name, str):
        raise ConfigError("expected a string", file, f"{path}.{key}", name)
    return name, {k: v for k, v in section.items() if k != key}


def _lookup(registry, name, path, file):
    try:
        return registry.get(name)
    except KeyError as e:
        raise ConfigError(e.args[0], file, path) from None
