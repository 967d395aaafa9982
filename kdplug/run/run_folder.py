"""`RunFolder`: who is using a run folder, and which settings filled it."""

import contextlib
import datetime
import fcntl
import os

from kdplug import storage
from kdplug.data.readers import source_fingerprints
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError

SETTINGS = "settings.json"
LOCK = ".lock"
# What a run leaves that depends on its settings (their presence means a
# re-run must be checked against the settings that produced them).
TRAINING_STATE = ("stages", "backup")
# Parts of a config that do not change what a run trains or measures.
NOT_SETTINGS = ("name", "output_dir", "export", "analysis", "evaluation")


class RunFolder:
    """A run folder: locked while a run uses it, and tied to the settings
    that produced what is in it.

    - `lock()`: one `kdplug run` at a time per folder. A second run of the
      same folder stops at once with an error naming the process that holds
      it (an OS file lock on `<run>/.lock`, released by the OS when that
      process ends, even if it is killed).
    - `check(settings)`: a folder with finished or interrupted stages was
      filled by the settings recorded in `<run>/settings.json`; different
      settings stop the run with an error naming every changed field and the
      two ways out (`kdplug run --fresh`, another `output_dir`), before any
      training. An identical re-run continues (finished stages are skipped,
      an interrupted one resumes).
    - `record(settings)`: writes them once the check passed.
    - `move_aside()`: `kdplug run --fresh`; the old folder is renamed to
      `<run>.old-<UTC time>`, never deleted.

    Args:
        path: the run folder (`ExperimentConfig.run_dir()`).

    Examples:

    ```python
    folder = RunFolder(config.run_dir())
    with folder.lock():
        settings = run_settings(config)
        folder.check(settings, config.file)
        folder.record(settings)
        ...  # train
    ```
    """

    def __init__(self, path):
        self.path = os.path.abspath(path)

    def file(self, name):
        return os.path.join(self.path, name)

    @contextlib.contextmanager
    def lock(self):
        """Holds the folder's lock for the block; raises `KdplugError` naming
        the holder when another process has it."""
        try:
            os.makedirs(self.path, exist_ok=True)
            fd = os.open(self.file(LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:  # kdplug validate checks first; a race or a full disk
            raise KdplugError(
                f"cannot create the run folder {self.path} ({e.strerror}); set "
                "output_dir (or --output-dir) to a folder you can write") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
                raise KdplugError(
                    f"{self.path} is in use by another kdplug run "
                    f"({holder or 'process unknown'}); wait for it to finish, "
                    "or set output_dir (or --output-dir) to another folder"
                ) from None
            started = datetime.datetime.now().isoformat(timespec="seconds")
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"process {os.getpid()}, started {started}".encode(), 0)
            yield self
        finally:
            os.close(fd)  # releases the lock

    def has_training_state(self):
        """Whether the folder holds stages (finished or interrupted)."""
        return any(os.path.isdir(self.file(name)) and os.listdir(self.file(name))
                   for name in TRAINING_STATE)

    def recorded(self):
        """The settings recorded by the run that filled the folder, or None."""
        data = storage.read_json(self.file(SETTINGS))
        return data.get("settings") if isinstance(data, dict) else None

    def check(self, settings, config_file=None):
        """Raises `ConfigError` when the folder's stages were trained with
        other settings (or with settings kdplug did not record)."""
        if not self.has_training_state():
            return
        recorded = self.recorded()
        if recorded is None:
            raise ConfigError(
                f"{self.path} holds trained stages, but no record of the settings "
                f"that produced them (a run of kdplug 0.1, or a damaged "
                f"{SETTINGS}); they cannot be reused safely. "
                + ways_out(self.path),
                config_file, "output_dir")
        changes = changed_fields(recorded, settings)
        if changes:
            shown = "; ".join(changes[:12]) + (
                f"; and {len(changes) - 12} more" if len(changes) > 12 else "")
            raise ConfigError(
                f"{self.path} holds stages trained with other settings, which "
                f"this run would reuse as if they were its own: {shown}. "
                + ways_out(self.path),
                config_file, "output_dir")

    def record(self, settings):
        storage.write_json(self.file(SETTINGS), {
            "fingerprint": storage.fingerprint(settings), "settings": settings})

    def move_aside(self):
        """Renames the folder to `<path>.old-<UTC time>` (returned); None
        when there is no folder."""
        if not os.path.exists(self.path):
            return None
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        target = f"{self.path}.old-{stamp}"
        suffix = 1
        while os.path.exists(target):
            suffix += 1
            target = f"{self.path}.old-{stamp}-{suffix}"
        os.rename(self.path, target)
        return target


def run_settings(config, data_fingerprint=None):
    """What a run's results depend on, as plain data: the resolved config
    without `name`, `output_dir` and `export`, plus the content fingerprint
    of the data files (a file changed in place changes the results too), or
    `data_fingerprint`, that of in-memory data (`Experiment(config,
    data=...)`), and that of the method's and student's own files
    (`config.input_files`: a corpus, a student's model folder). Data fields added for issue #17 and left at their defaults
    are left out (`DataConfig.key_fields`), so older run folders resume."""
    settings = {k: v for k, v in config.to_dict().items() if k not in NOT_SETTINGS}
    settings["data"] = {k: v for k, v in settings["data"].items()
                        if k in config.data.key_fields()}
    path = config.data.path
    if data_fingerprint is not None:
        settings["data_file_content"] = data_fingerprint
    elif path is None or (not path.startswith("tfds:")
                          and os.path.exists(config.resolve_path(path))):
        settings["data_file_content"] = source_fingerprints(config.data,
                                                            config.resolve_path)
    if config.input_files:  # a method's corpus, a student's model folder
        settings["input_file_content"] = {
            field: storage.fingerprint_path(path)
            for field, path in config.input_files.items()}
    return settings


def changed_fields(old, new, prefix=""):
    """`["training.learning_rate: 0.0001 -> 0.001", ...]` between two
    settings dicts (dotted paths, sorted).

    A key missing on one side and null on the other is unchanged (an
    option added to kdplug since the run, left unset).

    >>> changed_fields({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}, "d": 4})
    ['a.c: 2 -> 3', 'd: (not set) -> 4']
    >>> changed_fields({"a": 1}, {"a": 1, "new_option": None})
    []
    """
    out = []
    for key in sorted(set(old) | set(new), key=str):
        path = f"{prefix}{key}"
        a, b = old.get(key, _UNSET), new.get(key, _UNSET)
        if isinstance(a, dict) and isinstance(b, dict):
            out += changed_fields(a, b, prefix=f"{path}.")
        elif a != b and not _unset_both(a, b):
            out.append(f"{path}: {_shown(a)} -> {_shown(b)}")
    return out


def ways_out(path):
    return (f"Start over with `kdplug run --fresh` (moves {path} aside to "
            f"{os.path.basename(path)}.old-<time>, deleting nothing), or set "
            "output_dir (or --output-dir) to another folder.")


_UNSET = object()


def _unset_both(a, b):
    """Missing on one side, null on the other: an option added since, unset."""
    return (a is _UNSET and b is None) or (a is None and b is _UNSET)


def _shown(value):
    if value is _UNSET:
        return "(not set)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
