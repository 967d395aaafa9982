"""Reading a finished run folder: is it finished, its student file, its
config.

One reader for everything that opens a finished run: `kdplug.analysis`
(`load_run`, `kdplug analyze`) and `kdplug.run.TrainedRun` (`kdplug
predict`, `evaluate`, `export`). It stands on its own floor, above
`config.loading` (a run's `config.yaml` names its plugins' sections) and
below analysis, which sits below run (docs/architecture.md, "Floors").

Examples:

```python
check_finished("runs/quickstart")       # KdplugError unless it is one
student_file("runs/quickstart")         # "runs/quickstart/student.keras"
config = read_run_config("runs/quickstart")
```
"""

import os

import yaml

from kdplug import storage
from kdplug.config.loading import config_from_dict
from kdplug.errors import KdplugError
from kdplug.run_files import CONFIG
from kdplug.run_files import EXPORT
from kdplug.run_files import SOURCE
from kdplug.run_files import STUDENT_FILE


def student_file(run_dir):
    """The trained student of a run folder: `student.keras`, else the
    `.keras` export (`export/student.keras`); None when neither is there.

    Args:
        run_dir: the run folder.
    """
    for path in (os.path.join(run_dir, STUDENT_FILE),
                 os.path.join(run_dir, EXPORT, STUDENT_FILE)):
        if os.path.isfile(path):
            return path
    return None


def check_finished(run_dir):
    """Raises `KdplugError` (naming the folder and what is missing) unless
    `run_dir` is a run folder with a trained student.

    Args:
        run_dir: the run folder.
    """
    if not os.path.isdir(run_dir):
        what = ("a file, not a run folder" if os.path.exists(run_dir)
                else "no such run folder")
        raise KdplugError(f"{run_dir}: {what} (`kdplug run CONFIG` writes one under "
                          "the config's output_dir)")
    if not os.path.isfile(os.path.join(run_dir, CONFIG)):
        raise KdplugError(
            f"{run_dir}: no {CONFIG}; not a run folder (`kdplug run CONFIG` "
            "writes one under output_dir)")
    if student_file(run_dir) is None:
        raise KdplugError(
            f"{run_dir}: no {STUDENT_FILE} (nor {EXPORT}/{STUDENT_FILE}): the run has "
            "no trained student yet; it must finish first (re-run `kdplug run` with "
            "its config to resume it)")


def read_run_config(run_dir, config_file=None):
    """The resolved config of a finished run (checked by `check_finished`),
    its relative paths resolving against the config file the run was
    started from.

    Args:
        run_dir: the run folder.
        config_file: the config file the run was started from; None: the
            one its `source.json` names, else the run's own `config.yaml`
            (runs made before `source.json`, or moved from another
            machine).

    Returns:
        The run's `ExperimentConfig`.
    """
    check_finished(run_dir)
    with open(os.path.join(run_dir, CONFIG), encoding="utf-8") as f:
        data = yaml.safe_load(f)
    source = storage.read_json(os.path.join(run_dir, SOURCE)) or {}
    file = config_file or source.get("config_file")
    if file is None or not os.path.isdir(os.path.dirname(os.path.abspath(file))):
        file = os.path.join(run_dir, CONFIG)
    return config_from_dict(data, file=file)
