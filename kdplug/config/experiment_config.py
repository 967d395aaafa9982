"""`ExperimentConfig`: a whole validated config document."""

import dataclasses
import os
from typing import Optional

from kdplug.config.schema import to_dict
from kdplug.config.sections import AnalysisConfig
from kdplug.config.sections import CacheConfig
from kdplug.config.sections import DataConfig
from kdplug.config.sections import EvaluationConfig
from kdplug.config.sections import ExportConfig
from kdplug.config.sections import TeacherConfig
from kdplug.config.sections import TrainingConfig


@dataclasses.dataclass
class PluginSection:
    """`method:` / `student:`: a plugin name plus that plugin's options."""

    name: str
    options: dict


@dataclasses.dataclass
class ExperimentConfig:
    """A validated config: every section typed, defaults filled in.

    Built by `kdplug.config.load_config` / `config_from_dict`, never by
    hand. `method_config` and `student_config` are instances of the
    registered plugins' `Config` dataclasses; `augment` keeps the document's
    list as written (for the resolved `config.yaml`), `augment_entries` the
    validated `AugmentEntry`s. `input_files` maps the dotted fields of the
    method's and student's files and model folders (their `path_fields` /
    `source_fields`) to the resolved paths, whose content the run's
    settings fingerprint.

    Examples:

    ```python
    config = load_config("configs/quickstart.yaml")
    config.run_dir(), config.resolve_path(config.data.path)
    ```
    """

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
    augment_entries: list = dataclasses.field(default_factory=list)
    input_files: dict = dataclasses.field(default_factory=dict)
    cache: Optional[CacheConfig] = None
    export: Optional[ExportConfig] = dataclasses.field(default_factory=ExportConfig)
    analysis: Optional[AnalysisConfig] = None
    evaluation: EvaluationConfig = dataclasses.field(default_factory=EvaluationConfig)
    # The run's task kind: `data.task`, or the method's first task kind
    # (`kdplug.tasks.get_task(config.task)` gives its behaviour).
    task: str = "classification"

    @property
    def base_dir(self):
        return os.path.dirname(os.path.abspath(self.file)) if self.file else os.getcwd()

    def resolve_path(self, path):
        """A path from the config, relative to the config file's folder."""
        path = os.path.expanduser(path)
        return os.path.normpath(os.path.join(self.base_dir, path))

    def run_dir(self):
        return os.path.abspath(self.output_dir.format(name=self.name))

    def _student_as_written(self):
        """The student section with every default; its model sources
        (`input_files`, resolved for loading) as written, as
        `teacher.source` is."""
        section = {"kind": self.student.name, **to_dict(self.student_config)}
        for key, value in self.student.options.items():
            if f"student.{key}" in self.input_files:
                section[key] = value
        return section

    def to_dict(self):
        """The resolved config as plain data (what `kdplug validate` prints
        and a run folder's `config.yaml` holds): every default filled in,
        paths as written (they resolve against the config file)."""
        return {
            "name": self.name,
            "seed": self.seed,
            "output_dir": self.output_dir,
            "data": to_dict(self.data),
            "teacher": to_dict(self.teacher),
            "method": {"name": self.method.name, **to_dict(self.method_config)},
            "student": self._student_as_written(),
            "training": to_dict(self.training),
            "augment": self.augment,
            "cache": to_dict(self.cache) if self.cache else False,
            "export": to_dict(self.export) if self.export else False,
            "analysis": to_dict(self.analysis) if self.analysis else False,
            "evaluation": to_dict(self.evaluation),
        }
