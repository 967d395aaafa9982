"""`ExperimentConfig`: a whole validated config document."""

import dataclasses
import functools
import os
from typing import Annotated
from typing import NamedTuple
from typing import Optional
from typing import Union

from kdplug.config.ranges import Range
from kdplug.config.schema import to_dict
from kdplug.config.sections import AnalysisConfig
from kdplug.config.sections import CacheConfig
from kdplug.config.sections import DataConfig
from kdplug.config.sections import EvaluationConfig
from kdplug.config.sections import ExportConfig
from kdplug.config.sections import TeacherConfig
from kdplug.config.sections import TrainingConfig


KEY = "document_key"  # the metadata entry that marks a top-level key


class DocumentKey(NamedTuple):
    """How a top-level key of a config document is read and written.

    Args:
        written: the key's type as the document holds it, when that is not
            the field's own (a section is a `dict`, read into its section
            dataclass by `config_from_dict`); None: the field's own type,
            and `config_from_dict` copies the value as read.
        written_default: the key's default in the document when `written`
            is given (`dataclasses.MISSING`: the key is required).
        write: the `ExperimentConfig` method writing the key back; None:
            `schema.to_dict` of the value (`false` for a section switched
            off).
    """

    written: object = None
    written_default: object = dataclasses.MISSING
    write: Optional[str] = None


def top_level(written=None, written_default=dataclasses.MISSING, write=None, **field):
    """An `ExperimentConfig` field that is a top-level key of the document
    (`DocumentKey`); `field`: `dataclasses.field`'s `default` or
    `default_factory`.

    Examples:

    ```python
    seed: Annotated[int, Range(0, 2**32 - 1)] = top_level(default=0)
    training: TrainingConfig = top_level(written=Optional[dict], written_default=None)
    ```
    """
    return dataclasses.field(
        metadata={KEY: DocumentKey(written, written_default, write)}, **field)


@dataclasses.dataclass
class PluginSection:
    """`method:` / `student:`: a plugin name plus that plugin's options."""

    name: str
    options: dict


@dataclasses.dataclass(kw_only=True)
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

    # The document's top-level keys, in the order `to_dict` writes them:
    # each declared once, here (`top_level`); `document_schema` and `to_dict`
    # derive from these fields, and `config_from_dict` copies a plain key
    # (one with no `written` type of its own) as read.
    name: str = top_level()
    seed: Annotated[int, Range(0, 2**32 - 1)] = top_level(default=0)
    output_dir: str = top_level(default="runs/{name}")
    data: DataConfig = top_level(written=dict)
    teacher: TeacherConfig = top_level(written=dict)
    method: PluginSection = top_level(written=dict, write="_method_as_written")
    student: PluginSection = top_level(
        written=Optional[dict], written_default=None, write="_student_as_written")
    training: TrainingConfig = top_level(written=Optional[dict], written_default=None)
    augment: list = top_level(
        written=Optional[list], written_default=None, default_factory=list)
    cache: Optional[CacheConfig] = top_level(
        written=Union[bool, dict, None], written_default=None, default=None)
    export: Optional[ExportConfig] = top_level(
        written=Union[bool, dict], written_default=True, default_factory=ExportConfig)
    analysis: Optional[AnalysisConfig] = top_level(
        written=Union[bool, dict, None], written_default=None, default=None)
    evaluation: EvaluationConfig = top_level(
        written=Optional[dict], written_default=None, default_factory=EvaluationConfig)
    # Read from the document through the keys above.
    method_config: object
    student_config: object
    file: Optional[str] = None
    augment_entries: list = dataclasses.field(default_factory=list)
    input_files: dict = dataclasses.field(default_factory=dict)
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

    def _method_as_written(self):
        return {"name": self.method.name, **to_dict(self.method_config)}

    def to_dict(self):
        """The resolved config as plain data (what `kdplug validate` prints
        and a run folder's `config.yaml` holds): every default filled in,
        paths as written (they resolve against the config file), a section
        switched off as `false`."""
        out = {}
        for field in document_keys():
            write = field.metadata[KEY].write
            value = getattr(self, field.name)
            out[field.name] = (getattr(self, write)() if write
                               else False if value is None else to_dict(value))
        return out


def document_keys():
    """The fields of `ExperimentConfig` that are top-level keys of a config
    document, in document order."""
    return [f for f in dataclasses.fields(ExperimentConfig) if KEY in f.metadata]


@functools.cache
def document_schema():
    """The dataclass `kdplug.config.schema.parse` reads a whole document
    with first: one field per top-level key, typed as written (a section is
    a mapping, read into its own section dataclass next), with the key's
    default."""
    fields = []
    for field in document_keys():
        spec = field.metadata[KEY]
        if spec.written is None:
            hint, default = field.type, field.default
        else:
            hint, default = spec.written, spec.written_default
        fields.append((field.name, hint) if default is dataclasses.MISSING
                      else (field.name, hint, dataclasses.field(default=default)))
    return dataclasses.make_dataclass("Document", fields, kw_only=True)
