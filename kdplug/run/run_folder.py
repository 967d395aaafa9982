"""`RunFolder`: who is using a run folder, and which settings filled it."""

import contextlib
import datetime
import fcntl
import os

from kdplug import storage
from kdplug.config.sources import resolve_source
from kdplug.data.readers import source_fingerprints
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.run_files import SETTINGS
from kdplug.run_files import TRAINING_STATE

LOCK = ".lock"
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
    - `check_owner(config_file, fresh)`: before anything is written there,
      a folder that is not a kdplug run folder (`is_run_folder()`: it
      exists, holds something, and has no `settings.json`, `stages/` or
      `backup/`) stops the run with an error naming it and `output_dir`:
      a run would overwrite the user's `summary.md`, `metrics.json`,
      `config.yaml`. With `fresh`, the working folder (or a folder above
      it) is refused too: `--fresh` never moves it.
    - `move_aside()`: `kdplug run --fresh`; the old folder, a kdplug run
      folder, is renamed to `<run>.old-<UTC time>`, never deleted.

    Args:
        path: the run folder (`ExperimentConfig.run_dir()`).

    Examples:

    ```python
    folder = RunFolder(config.run_dir())  # resolved once, used throughout
    folder.check_owner(config.file)
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

    def is_run_folder(self):
        """Whether kdplug may write here: the folder is missing or empty
        (its lock file aside: a run stopped before it recorded anything), or
        a kdplug run folder (`settings.json`, `stages/` or `backup/`)."""
        if not os.path.isdir(self.path):
            return True
        if self.recorded() is not None or any(
                os.path.isdir(self.file(name)) for name in TRAINING_STATE):
            return True
        return not self._contents()

    def check_owner(self, config_file=None, fresh=False):
        """Raises `ConfigError` (naming `output_dir`) before anything is
        written when the folder holds files of the user's (not a kdplug run
        folder), and, with `fresh`, when moving it aside would move the
        working folder."""
        if not self.is_run_folder():
            names = self._contents()
            shown = ", ".join(names[:3]) + (
                f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise ConfigError(
                f"{self.path} holds files kdplug did not write ({shown}) and is "
                f"not a kdplug run folder (no {SETTINGS}, stages/ or backup/): "
                "a run would overwrite them"
                + (", and --fresh moves only kdplug run folders" if fresh else "")
                + ". Set output_dir (or --output-dir) to a new or empty folder",
                config_file, "output_dir")
        if fresh and self._holds_working_folder():
            raise ConfigError(
                f"--fresh would move {self.path} aside, and it is the working "
                "folder (or holds it): run from another folder, or set output_dir "
                "(or --output-dir) to another folder", config_file, "output_dir")

    def _contents(self):
        """The folder's entries but its lock file, sorted."""
        return sorted(name for name in os.listdir(self.path) if name != LOCK)

    def _holds_working_folder(self):
        here = os.path.realpath(os.getcwd())
        folder = os.path.realpath(self.path)
        return here == folder or here.startswith(folder.rstrip(os.sep) + os.sep)

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

    def move_aside(self, config_file=None):
        """Renames the folder to `<path>.old-<UTC time>` (returned); None
        when there is no folder. Only a kdplug run folder, and never the
        working folder or one above it (`check_owner(fresh=True)`)."""
        if not os.path.exists(self.path):
            return None
        self.check_owner(config_file, fresh=True)
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
    (`config.input_files`: a corpus, a student's model folder), and that
    of the teacher's files (`teacher_fingerprints`: a teacher replaced in
    place changes the results). Data fields added for issue #17 and left
    at their defaults are left out (`DataConfig.key_fields`), so older run
    folders resume."""
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
    settings["teacher_file_content"] = teacher_fingerprints(config)
    return settings


def teacher_fingerprints(config):
    """`{"teacher.source": fingerprint, "teacher.tokenizer": ...}`: the
    content of the teacher's files (a preset name, or a path that names
    nothing, stands for itself), so a teacher replaced in place at the same
    path is a changed run.

    Examples:

    ```python
    teacher_fingerprints(load_config("configs/quickstart.yaml"))
    # {"teacher.source": "9b1c..."}
    ```
    """
    teacher = config.teacher
    fields = {"teacher.source": teacher.source, "teacher.tokenizer": teacher.tokenizer}
    return {field: storage.fingerprint_path(_resolved(config, value))
            for field, value in fields.items() if value}


def _resolved(config, source):
    """`source` resolved as the teacher loader resolves it; as written when
    it names nothing (the loader's own error says so when the run loads it)."""
    try:
        return resolve_source(source, config.resolve_path, config.file)
    except ConfigError:
        return source


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
