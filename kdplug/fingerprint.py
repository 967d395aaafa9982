"""Content fingerprints used as cache keys."""

import hashlib
import json
import os

_CHUNK = 1 << 20


def fingerprint_file(path):
    """sha256 of a file (head and tail only for files over 64 MiB)."""
    h = hashlib.sha256()
    size = os.path.getsize(path)
    h.update(str(size).encode())
    with open(path, "rb") as f:
        if size <= 64 * _CHUNK:
            for block in iter(lambda: f.read(_CHUNK), b""):
                h.update(block)
        else:
            h.update(f.read(8 * _CHUNK))
            f.seek(-8 * _CHUNK, os.SEEK_END)
            h.update(f.read())
    return h.hexdigest()


def fingerprint_path(path):
    """A fingerprint of a file or of every file below a folder."""
    if os.path.isfile(path):
        return fingerprint_file(path)
    if not os.path.isdir(path):
        return str(path)  # a preset name
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            h.update(os.path.relpath(full, path).encode())
            h.update(fingerprint_file(full).encode())
    return h.hexdigest()


def fingerprint(obj):
    """sha256 of a JSON-able object, 16 hex digits."""
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_root():
    """`$KDPLUG_CACHE_DIR`, or `~/.cache/kdplug`."""
    return os.path.expanduser(os.environ.get("KDPLUG_CACHE_DIR", "~/.cache/kdplug"))
