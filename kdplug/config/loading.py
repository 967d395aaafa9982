"""Loading and validating a config document.

Configs are data: YAML read as `yaml.safe_load` reads it (`read_yaml`, which
also refuses a key given twice in one mapping), validated into the
dataclasses of `kdplug.config.sections`. The `method:` and `student:`
sections are validated against the `Config` dataclass of the plugin they
name, each `augment:` entry against its augmenter's.

Examples:

```python
config = load_config("configs/quickstart.yaml")
config.method.name, config.method_config.temperature
```
"""

import os
import string
import sys

import yaml

from kdplug.config.experiment_config import KEY
from kdplug.config.experiment_config import ExperimentConfig
from kdplug.config.experiment_config import PluginSection
from kdplug.config.experiment_config import document_keys
from kdplug.config.experiment_config import document_schema
from kdplug.config.refs import resolve_refs
from kdplug.config.schema import parse
from kdplug.config.sections import AnalysisConfig
from kdplug.config.sections import AugmentEntry
from kdplug.config.sections import BehaviourConfig
from kdplug.config.sections import CacheConfig
from kdplug.config.sections import DataConfig
from kdplug.config.sections import EvaluationConfig
from kdplug.config.sections import ExportConfig
from kdplug.config.sections import ProbingConfig
from kdplug.config.sections import TeacherConfig
from kdplug.config.sections import TeacherPipelineConfig
from kdplug.config.sections import TrainingConfig
from kdplug.config.sources import resolve_source
from kdplug.errors import ConfigError
from kdplug.errors import bounded_repr
from kdplug.errors import did_you_mean


def load_config(path, plugin_manager=None):
    """Reads and validates a YAML experiment config file."""
    if os.path.isdir(path):
        raise ConfigError("is a folder, not a config file (pass a .yaml file, "
                          "e.g. configs/quickstart.yaml)", file=path)
    if not os.path.isfile(path):
        raise ConfigError("config file not found", file=path)
    try:
        with open(path, encoding="utf-8") as f:
            data = read_yaml(f, path)
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {e}", file=path) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text: {e}", file=path) from None
    return config_from_dict(data, file=path, plugin_manager=plugin_manager)


def read_yaml(stream, file=None):
    """The document in `stream`, read as `yaml.safe_load` reads it, except
    that what it would let through silently or raise without a line is a
    `ConfigError` naming `file` and the line: a key given twice in one
    mapping (`safe_load` keeps the last one; a merge key's `<<: *base`
    entries may still be overridden), an integer of more digits than
    Python reads, a value Python cannot build (`2024-13-01`).

    Args:
        stream: a file object or a string.
        file: the file, for messages.

    Examples:

    ```python
    read_yaml("training: {epochs: 1}\ntraining: {epochs: 2}\n", "x.yaml")
    # ConfigError: x.yaml: line 2: 'training' is given twice in one mapping ...
    ```
    """
    loader = _ConfigLoader(stream)
    loader.file = file
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


class _ConfigLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` with the checks `read_yaml` documents."""

    file = None

    def __init__(self, stream):
        super().__init__(stream)
        self._checked = set()  # the mapping nodes whose keys were checked

    def _error(self, node, message):
        return ConfigError(message, self.file, f"line {node.start_mark.line + 1}")

    def flatten_mapping(self, node):
        # The first call for a node sees its pairs as written (a merge
        # flattens the nodes it merges in place).
        if id(node) not in self._checked:
            self._checked.add(id(node))
            self._check_unique_keys(node)
        super().flatten_mapping(node)

    def _check_unique_keys(self, node):
        lines = {}
        for key_node, _ in node.value:
            if (not isinstance(key_node, yaml.ScalarNode)
                    or key_node.tag == "tag:yaml.org,2002:merge"):
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in lines:
                raise self._error(
                    key_node, f"{bounded_repr(key)} is given twice in one mapping "
                    f"(first at line {lines[key]}); YAML would keep only the last "
                    "one, so merge them")
            lines[key] = line

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except ValueError as e:
            if node.tag == "tag:yaml.org,2002:int":
                digits = sum(c.isdigit() for c in node.value)
                raise self._error(
                    node, f"an integer of {digits} digits, more than the "
                    f"{sys.get_int_max_str_digits()} Python reads; quote it if it "
                    "is text") from None
            raise self._error(node, "cannot read this value: "
                              f"{bounded_repr(str(e), 160)}") from None


def config_from_dict(data, file=None, plugin_manager=None):
    """Validates a config document (already parsed YAML)."""
    if plugin_manager is None:
        from kdplug.plugin.manager import get_plugin_manager

        plugin_manager = get_plugin_manager()
    if not isinstance(data, dict):
        raise ConfigError("a config must be a mapping of sections", file, None, data)
    top = parse(document_schema(), data, "", file)
    check_output_dir(top.output_dir, file)
    data_cfg = parse(DataConfig, _data_aliases(top.data, file), "data", file)
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
    resolve_refs(method_config, plugin_manager, "method", file)

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
    resolve_refs(student_config, plugin_manager, "student", file)
    cache = _switchable(CacheConfig, top.cache, "cache", file)
    export = _switchable(ExportConfig, top.export, "export", file)
    config = ExperimentConfig(
        **{f.name: getattr(top, f.name) for f in document_keys()
           if f.metadata[KEY].written is None},  # name, seed, output_dir
        data=data_cfg,
        teacher=teacher,
        method=PluginSection(method_name, method_opts),
        student=PluginSection(student_kind, student_opts),
        training=training,
        method_config=method_config,
        student_config=student_config,
        file=file,
        augment=top.augment or [],
        cache=cache,
        export=export,
        analysis=parse_analysis(top.analysis, file),
        evaluation=parse_evaluation(top.evaluation, file, _task_kinds(data_cfg, method_cls)),
        task=_task_kind(data_cfg, method_name, method_cls, plugin_manager, file),
    )
    _resolve_sources(student_cls, config)
    _resolve_method_paths(method_cls, config)
    config.augment_entries = parse_augment(
        top.augment, plugin_manager.augmenters, file,
        resolve_path=config.resolve_path,
    )
    _check_early_stopping(config)
    _check_task(config)
    check = getattr(method_cls, "check_config", None)
    if callable(check):  # checks across sections (a Method's or a duck-typed plugin's)
        check(config)
    return config


def _resolve_sources(student_cls, config):
    """A student kind's model sources (its `source_fields`, e.g. `hub`'s
    `source`), read as `teacher.source` is: a path relative to the config
    file, `package:<module>/<dir>` or a preset name; a missing one is an
    error naming the field."""
    for field in getattr(student_cls, "source_fields", ()):
        value = getattr(config.student_config, field, None)
        if value:
            path = resolve_source(value, config.resolve_path, config.file,
                                  f"student.{field}")
            setattr(config.student_config, field, path)
            config.input_files[f"student.{field}"] = path


def _resolve_method_paths(method_cls, config):
    """A method's files (its `path_fields`, e.g. TinyBERT's
    `general_corpus`): resolved against the config file into
    `config.input_files` (the option keeps its value as written); a
    missing file is an error naming `method.<field>`."""
    for field in getattr(method_cls, "path_fields", ()):
        value = getattr(config.method_config, field, None)
        if not value:
            continue
        path = config.resolve_path(value)
        if not os.path.isfile(path):
            what = "a folder" if os.path.isdir(path) else "no such file"
            raise ConfigError(f"{path}: {what}; give a file (paths resolve against "
                              "the config file's folder)", config.file,
                              f"method.{field}", value)
        config.input_files[f"method.{field}"] = path


def parse_augment(entries, registry, file=None, resolve_path=None, path="augment"):
    """Validates an `augment:` list into `AugmentEntry`s (data, no objects).

    Each entry is `{name: <augmenter>, n: <samples per example, default 10>,
    ...the augmenter's Config options}`.

    Args:
        entries: the list from the YAML (None or [] for no augmentation).
        registry: the augmenter registry.
        file: the config file, for messages.
        resolve_path: maps a path option (an augmenter's `path_fields`, e.g.
            `lexicon`, `preset`) to an absolute path, e.g. relative to the
            config file (`ExperimentConfig.resolve_path`).
        path: the dotted path of the list in the document, for messages.
    """
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ConfigError("expected a list of {name: ..., n: ...} entries",
                          file, path, entries)
    out = []
    for index, entry in enumerate(entries):
        where = f"{path}[{index}]"
        if not isinstance(entry, dict) or "name" not in entry:
            raise ConfigError("expected a mapping with a `name`", file, where, entry)
        options = dict(entry)
        name = options.pop("name")
        n = options.pop("n", 10)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError("must be an integer >= 1", file, f"{where}.n", n)
        cls = _lookup(registry, name, f"{where}.name", file)
        config = parse(cls.Config, options, where, file)
        if resolve_path is not None:
            for field in getattr(cls, "path_fields", ()):
                value = getattr(config, field, None)
                if value:
                    setattr(config, field, resolve_path(value))
        out.append(AugmentEntry(name, n, config))
    return out


OUTPUT_DIR_FIELDS = ("name",)


def check_output_dir(template, file):
    """`output_dir` may use `{name}` (the config's name) and nothing else."""
    if not template.strip():
        raise ConfigError("must name a folder, e.g. runs/{name}", file,
                          "output_dir", template)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        raise ConfigError(f"not a valid folder template ({e}); write literal "
                          "braces as {{ and }}", file, "output_dir", template) from None
    for field in fields:
        if field not in OUTPUT_DIR_FIELDS:
            raise ConfigError(
                f"unknown placeholder {{{field}}}{did_you_mean(field, OUTPUT_DIR_FIELDS)}"
                f"; output_dir may use {{name}}", file, "output_dir", template)


def parse_analysis(value, file=None, path="analysis"):
    """Validates an `analysis:` section: `true` (every default), a mapping
    whose `probing:` / `behaviour:` parts may each be `false`, or
    `false`/absent (None)."""
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError("expected true, false or a mapping", file, path, value)
    rest = {k: v for k, v in value.items() if k not in ("probing", "behaviour")}
    parts = {"probing": ProbingConfig, "behaviour": BehaviourConfig}
    parsed = {name: _switchable(cls, value.get(name, True), f"{path}.{name}", file)
              for name, cls in parts.items()}
    parse(AnalysisConfig, rest, path, file)  # unknown keys
    try:
        return AnalysisConfig(**parsed)
    except ValueError as e:
        raise ConfigError(str(e), file, path) from None


def parse_evaluation(value, file=None, kinds=("classification",), path="evaluation"):
    """Validates an `evaluation:` section (absent: every default); each
    metric must be one of the task kinds in `kinds` (a method's
    `task_kinds`, default classification), and the error names its entry."""
    metrics = value.get("metrics") if isinstance(value, dict) else None
    for index, name in enumerate(metrics if isinstance(metrics, list) else []):
        problem = EvaluationConfig.problem(name, kinds)
        if problem:
            raise ConfigError(problem, file, f"{path}.metrics[{index}]", name)
    return parse(EvaluationConfig, {} if value is None else value, path, file)


def _task_kinds(data_cfg, method_cls):
    """The task kinds a run's metrics may belong to: every kind the method
    trains when one run mixes them (`Method.mixed_task_kinds`, e.g. a
    multi-task student), else the run's one kind (`data.task`, default the
    method's first)."""
    kinds = tuple(getattr(method_cls, "task_kinds", ("classification",)))
    if getattr(method_cls, "mixed_task_kinds", False) and data_cfg.task is None:
        return kinds
    return (data_cfg.task or kinds[0],)


def _task_kind(data_cfg, method_name, method_cls, plugin_manager, file):
    """`data.task`, or the method's first task kind; a kind the method does
    not train is an error naming the methods that do."""
    kinds = tuple(getattr(method_cls, "task_kinds", ("classification",)))
    if data_cfg.task is None:
        return kinds[0]
    if data_cfg.task not in kinds:
        able = [name for name in plugin_manager.methods.names()
                if data_cfg.task in getattr(plugin_manager.methods.get(name),
                                            "task_kinds", ("classification",))]
        raise ConfigError(
            f"method {method_name!r} trains {' and '.join(kinds)} tasks, not "
            f"{data_cfg.task}; methods for {data_cfg.task} tasks: "
            f"{', '.join(able) or 'none installed'} (docs/tasks.md)",
            file, "data.task", data_cfg.task)
    return data_cfg.task


def _check_task(config):
    """What a task kind other than classification cannot have: a transfer
    set (augmented examples have no label of that kind) and an early
    stopping monitor it does not log (`val_accuracy` by default)."""
    if config.task == "classification":
        return
    if config.task == "token_classification":
        for field, section in (("training.length_buckets", config.training.length_buckets),
                               ("teacher.pipeline", config.teacher.pipeline)):
            if section is not None:
                raise ConfigError(
                    "cuts batches to their longest sentence, and per-token labels "
                    "are not cut with them yet; remove it for token classification",
                    config.file, field)
    if config.task == "extractive_qa" and not config.data.text_pair_column:
        raise ConfigError(
            "extractive_qa reads a question (data.text_column), a context "
            "(data.text_pair_column) and answers (data.label_column) from flat "
            "rows; set data.text_pair_column (SQuAD's: context)",
            config.file, "data.text_pair_column", None)
    if config.augment:
        raise ConfigError(
            f"augmentation labels its new examples as unlabelled classification "
            f"rows, and this is a {config.task} task; remove the augment section",
            config.file, "augment")
    finetune = config.teacher.finetune
    logged = {f"val_{name}" for name in EvaluationConfig.METRICS[config.task]}
    for field, section in (
            ("training.early_stopping", config.training.early_stopping),
            ("teacher.finetune.early_stopping",
             finetune.early_stopping if finetune else None)):
        if section is None or section.monitor in logged or "loss" in section.monitor:
            continue
        raise ConfigError(
            f"{config.task} tasks log {', '.join(sorted(logged))} and val_loss on "
            f"the validation split, not {section.monitor}; set {field}.monitor "
            f"(e.g. val_{EvaluationConfig.DEFAULTS[config.task][0]})",
            config.file, f"{field}.monitor", section.monitor)


def _check_early_stopping(config):
    """Early stopping needs a validation split to watch."""
    finetune = config.teacher.finetune
    for field, section in (
            ("training.early_stopping", config.training.early_stopping),
            ("teacher.finetune.early_stopping",
             finetune.early_stopping if finetune else None)):
        if section is not None and not config.data.has_validation:
            missing = ("data.validation_split is null; name the split (e.g. dev)"
                       if config.data.path is not None else
                       "there is no data.dev; name the validation file")
            raise ConfigError(
                f"early stopping watches the validation split, and {missing} or "
                f"remove {field}", config.file, field)


def _data_aliases(data, file):
    """`data.validation: FILE` is `data.dev: FILE`."""
    if not isinstance(data, dict) or "validation" not in data:
        return data
    if "dev" in data:
        raise ConfigError("data.dev and data.validation name the same split; "
                          "keep one", file, "data.validation")
    return {("dev" if key == "validation" else key): value
            for key, value in data.items()}


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
