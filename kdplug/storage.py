"""Files kdplug writes: atomic writes, content fingerprints, the cache root.

Every file kdplug writes goes through here, so that a run killed at any
moment leaves either the previous file or the new one, never half of one:
the bytes go to a temporary name in the same folder (`.<name>.tmp.<pid>.<rand>`),
are flushed and `fsync`ed, then `os.replace`d onto the final name and the
folder entry itself is synced where the OS allows it. Temporaries left by a
killed process are recognised by their marker and removed by
`remove_stale_temporaries` (never those of a live process).

Fingerprints are the content hashes used as cache keys and, for runs, to tell
whether a finished stage was produced by the same settings.

Examples:

```python
from kdplug import storage

storage.write_json("runs/x/metrics.json", report)
with storage.atomic_write("runs/x/summary.md") as f:
    f.write(text)
storage.save_weights(student, "runs/x/stages/01-distill.weights.h5")
storage.fingerprint({"lr": 1e-4, "epochs": 3})  # '3f1c...' (16 hex digits)
```
"""

import contextlib
import errno
import hashlib
import io
import json
import os
import shutil
import stat
import uuid
import zipfile

from kdplug.errors import StorageError

# What plugins may use (docs/writing-a-plugin.md, "The plugin API").
__all__ = [
    "CACHE_ENV", "atomic_folder", "atomic_write", "cache_root", "fingerprint",
    "fingerprint_path", "mark_entry", "read_json", "save_model", "save_weights",
    "write_json", "write_npz", "write_text",
]

TMP_MARK = ".tmp."
_CHUNK = 1 << 20
_LARGE_FILE = 64 * _CHUNK


# ------------------------------------------------------------ atomic writes
def temporary_name(path, suffix=""):
    """A hidden temporary name beside `path` that carries this process id
    (so `remove_stale_temporaries` can tell a live writer's file)."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(
        folder, f".{name}{TMP_MARK}{os.getpid()}.{uuid.uuid4().hex[:8]}{suffix}")


def commit(tmp, path):
    """Renames a finished temporary onto `path` and syncs the folder."""
    os.replace(tmp, path)
    try:  # make the rename itself durable where the OS allows it
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8"):
    """A file handle whose content replaces `path` only if the block ends
    without an exception.

    Args:
        path: the final file; its folder is created if missing.
        mode: `"w"` (text) or `"wb"` (bytes).
        encoding: for text mode.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', got {mode!r}")
    tmp = temporary_name(path)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        commit(tmp, path)
    except OSError as e:  # a full disk, a file size limit: one line, not a traceback
        raise write_failure(path, e) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def atomic_folder(path):
    """A temporary name beside folder `path` for the block to write a
    folder at; it replaces `path` (and a folder there) only when the block
    ends without an exception, so `path` is never half-written: a process
    killed meanwhile leaves the old folder (or none) and a temporary that
    `remove_stale_temporaries` removes.

    Examples:

    ```python
    with storage.atomic_folder("runs/x/export/saved_model") as tmp:
        model.export(tmp, format="tf_saved_model")
    ```
    """
    tmp = temporary_name(path)
    old = None
    try:
        yield tmp
        if os.path.isdir(path) and not os.path.islink(path):
            old = temporary_name(path)
            os.rename(path, old)
        commit(tmp, path)
    except OSError as e:
        raise write_failure(path, e) from None
    finally:
        for leftover in (tmp, old):
            if leftover is not None and os.path.exists(leftover):
                shutil.rmtree(leftover, ignore_errors=True)


# errno values of a write that ran out of room (`write_failure`).
OUT_OF_ROOM = {errno.ENOSPC: "the disk is full",
               errno.EFBIG: "over the file size limit: ulimit -f",
               errno.EDQUOT: "over the disk quota"}


def write_failure(path, error, cleaned=True):
    """The `StorageError` for an `OSError` met writing `path`: one line
    naming the file and the cause (and, when `cleaned`, that the write left
    nothing behind).

    >>> str(write_failure("runs/x/a.json", OSError(28, "No space left on device")))
    'cannot write runs/x/a.json: No space left on device (the disk is full); nothing half-written is left there'
    """
    if isinstance(error, StorageError):  # already said (a nested write)
        return error
    cause = OUT_OF_ROOM.get(error.errno)
    text = (f"cannot write {path}: {error.strerror or error}"
            + (f" ({cause})" if cause else "")
            + ("; nothing half-written is left there" if cleaned else ""))
    return StorageError(error.errno, text, path)


def write_text(path, text):
    with atomic_write(path) as f:
        f.write(text)
    return path


def write_json(path, obj, indent=2, sort_keys=False):
    """Writes JSON atomically; numpy scalars and other numbers become floats."""
    with atomic_write(path) as f:
        json.dump(obj, f, indent=indent, sort_keys=sort_keys, default=_json_default)
    return path


def write_npz(path, arrays):
    """Writes `{name: array}` as an uncompressed `.npz`, atomically."""
    import numpy as np

    with atomic_write(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def save_weights(model, path, include_optimizer=True):
    """`model.save_weights(path)` (a `.weights.h5` file), atomically.

    Keras writes a compiled model's optimizer state into its weights file
    too (two thirds of a fine-tuned BERT's file with AdamW);
    `include_optimizer=False` leaves it out (a cached model that is only
    ever loaded, never trained on)."""
    if not path.endswith(".weights.h5"):
        raise ValueError(f"expected a file name ending with '.weights.h5', got {path!r}")
    skip = [] if include_optimizer or getattr(model, "optimizer", None) is None else [
        model.optimizer]
    with atomic_write(path, "wb") as f:
        f.write(_weights_h5(model, skip))
    return path


def _weights_h5(model, objects_to_skip):
    """The bytes of `model.save_weights()`'s `.weights.h5` file, built in
    memory (as Keras builds the weights inside a `.keras` file): HDF5 meets
    a full disk by crashing the process, a Python write with an `OSError`."""
    from keras.src.saving import saving_lib

    if not model.built:
        raise ValueError("cannot save the weights of a model that is not built")
    buffer = io.BytesIO()
    store = saving_lib.H5IOStore(buffer, mode="w")
    saving_lib._save_state(model, weights_store=store, assets_store=None,
                           inner_path="",
                           visited_saveables={id(o) for o in objects_to_skip})
    store.close()
    return buffer.getvalue()


def save_model(model, path):
    """`model.save(path)` (a `.keras` file), atomically."""
    return _save_with(model.save, path, ".keras")


def _save_with(save, path, suffix):
    """Runs `save(tmp)` (a writer that insists on a file suffix) into a
    temporary beside `path`, then commits it."""
    if not path.endswith(suffix):
        raise ValueError(f"expected a file name ending with {suffix!r}, got {path!r}")
    tmp = temporary_name(path, suffix)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        save(tmp)
        commit(tmp, path)
    except OSError as e:
        raise write_failure(path, e) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def unreadable(path):
    """Why a saved model file cannot be loaded (a `.keras` zip or a
    `.weights.h5` file cut short: a full disk, a copy interrupted), or None
    when it reads whole; every zip member is checked against its CRC."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
            return f"{bad} is damaged" if bad else None
        if path.endswith(".keras"):
            return "not a zip file (cut short?)"
        import h5py

        with h5py.File(path, "r"):
            return None
    except (OSError, EOFError, ValueError, zipfile.BadZipFile,
            zipfile.LargeZipFile) as e:
        return " ".join(str(e).split())[:200] or type(e).__name__


def read_json(path):
    """The parsed JSON in `path`, or None when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def remove_stale_temporaries(folder):
    """Deletes temporaries (files and folders) left in `folder` by killed
    processes (never those of a live process)."""
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        if not (name.startswith(".") and TMP_MARK in name):
            continue
        try:
            pid = int(name.split(TMP_MARK, 1)[1].split(".")[0])
        except ValueError:
            pid = None
        if pid is not None and pid != os.getpid() and _alive(pid):
            continue
        path = os.path.join(folder, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)  # a folder written by `atomic_folder`
            else:
                os.remove(path)
        except OSError:
            pass


def dir_size(path):
    """Bytes of the files directly in `path` (0 when it is not a folder)."""
    if not os.path.isdir(path):
        return 0
    return sum(
        os.path.getsize(os.path.join(path, f))
        for f in os.listdir(path)
        if os.path.isfile(os.path.join(path, f))
    )


def tree_size(path):
    """Bytes of a file, or of every file below a folder, each file once:
    hard links to one file (a run's `export/student.keras` and its
    `student.keras`) count once, as `du` counts them; symlinks (even
    dangling ones) count nothing."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    files = {}
    for top, _, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(top, name))
            if not stat.S_ISLNK(info.st_mode):  # a link's target is not the folder's
                files[(info.st_dev, info.st_ino)] = info.st_size
    return sum(files.values())


def format_size(num_bytes):
    size = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _json_default(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


# ------------------------------------------------------------- fingerprints
def fingerprint_file(path):
    """sha256 of a file (head and tail only for files over 64 MiB)."""
    h = hashlib.sha256()
    size = os.path.getsize(path)
    h.update(str(size).encode())
    with open(path, "rb") as f:
        if size <= _LARGE_FILE:
            for block in iter(lambda: f.read(_CHUNK), b""):
                h.update(block)
        else:
            h.update(f.read(8 * _CHUNK))
            f.seek(-8 * _CHUNK, os.SEEK_END)
            h.update(f.read())
    return h.hexdigest()


def file_sha256(path):
    """The sha256 hex digest of a whole file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint_path(path):
    """A fingerprint of a file or of every file below a folder; other
    strings (e.g. a preset name) fingerprint as themselves."""
    if os.path.isfile(path):
        return fingerprint_file(path)
    if not os.path.isdir(path):
        return str(path)
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            h.update(os.path.relpath(full, path).encode())
            if os.path.exists(full):
                h.update(fingerprint_file(full).encode())
            else:  # a dangling symlink: where it points
                h.update(f"-> {os.readlink(full)}".encode())
    return h.hexdigest()


def fingerprint(obj):
    """sha256 of a JSON-able object, 16 hex digits."""
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------- cache entries
CACHE_ENV = "KDPLUG_CACHE_DIR"
ENTRY_MARKER = ".kdplug-entry"


def cache_root():
    """`$KDPLUG_CACHE_DIR`, or `~/.cache/kdplug` when it is unset or empty.

    A relative value is refused rather than resolved against the working
    directory (where `kdplug cache rm --all` could reach the user's files).
    """
    value = os.environ.get(CACHE_ENV, "").strip()
    if not value:
        return os.path.expanduser("~/.cache/kdplug")
    path = os.path.expanduser(value)
    if not os.path.isabs(path):
        from kdplug.errors import KdplugError

        raise KdplugError(
            f"{CACHE_ENV}={value!r} is a relative path; set it to an absolute "
            f"folder (e.g. {CACHE_ENV}=$HOME/.cache/kdplug) or unset it")
    return path


def mark_entry(path, kind, key, **details):
    """Creates cache entry folder `path` and its marker (once).

    Only folders carrying this marker are ever removed by `kdplug cache rm`.
    Args:
        kind: `teacher-outputs`, `teacher` or `transfer-set`.
        key: the entry's key (its folder name).
        details: more JSON-able facts to record.
    """
    os.makedirs(path, exist_ok=True)
    marker = os.path.join(path, ENTRY_MARKER)
    if not os.path.isfile(marker):
        import datetime

        created = datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds")
        write_json(marker, {"kind": kind, "key": key, "created": created, **details},
                   indent=None)
    return path


def entry_marker(path):
    """The marker dict of cache entry folder `path`, or None."""
    marker = read_json(os.path.join(path, ENTRY_MARKER))
    return marker if isinstance(marker, dict) else None
