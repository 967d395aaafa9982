"""The teacher-output cache on disk: its layout, and listing and removing
entries (`kdplug cache ls` / `kdplug cache rm`; see docs/cache.md).

No TensorFlow here: the cache commands answer without loading it."""

import os
import re
import shutil

from kdplug import storage
from kdplug.errors import KdplugError
from kdplug.storage import cache_root
from kdplug.storage import format_size

# The on-disk layout of an entry (`TeacherCache` writes it).
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
INFO = "info.json"
SHARD = "shard-{:05d}.npz"
SHARD_RE = re.compile(r"^shard-(\d{5})\.npz$")
_KEY_RE = re.compile(r"^[0-9a-f]{1,64}$")


def list_entries(root=None):
    """Every cache entry under `root` (default `cache_root()/outputs`).

    Returns a list of dicts, oldest first: `key`, `path`, `complete`,
    `bytes`, `num_examples`, `shards_done`, `num_shards`, `taps`, `dtype`,
    `sequence_length`, `created`.
    """
    root = root or os.path.join(cache_root(), "outputs")
    if not os.path.isdir(root):
        return []
    entries = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if not os.path.isdir(path) or not _KEY_RE.match(name):
            continue
        manifest = storage.read_json(os.path.join(path, MANIFEST))
        info = manifest or storage.read_json(os.path.join(path, INFO)) or {}
        done = sum(1 for f in os.listdir(path) if SHARD_RE.match(f))
        entries.append({
            "key": name,
            "path": path,
            "complete": bool(manifest),
            "bytes": storage.dir_size(path),
            "num_examples": info.get("num_examples"),
            "shards_done": done,
            "num_shards": info.get("num_shards"),
            "taps": info.get("taps", []),
            "dtype": info.get("dtype"),
            "sequence_length": info.get("sequence_length"),
            "created": info.get("created", ""),
        })
    entries.sort(key=lambda e: (e["created"], e["key"]))
    return entries


def remove(key, root=None):
    """Deletes one entry, named by its key or a unique prefix of it.

    Returns the removed entry's dict (as `list_entries()` gives it).
    """
    key = str(key).strip()
    if not _KEY_RE.match(key):
        raise KdplugError(f"not a cache key: {key!r} (expected hex digits)")
    entries = list_entries(root)
    matches = [e for e in entries if e["key"] == key] or [
        e for e in entries if e["key"].startswith(key)
    ]
    if not matches:
        raise KdplugError(f"no teacher-output cache entry {key!r}")
    if len(matches) > 1:
        keys = ", ".join(e["key"] for e in matches)
        raise KdplugError(f"cache key prefix {key!r} is ambiguous: {keys}")
    shutil.rmtree(matches[0]["path"])
    return matches[0]


def remove_all(root=None):
    """Deletes every entry; returns their dicts."""
    entries = list_entries(root)
    for entry in entries:
        shutil.rmtree(entry["path"])
    return entries


def format_entries(entries):
    """A plain-text table of `list_entries()` for `kdplug cache ls`."""
    if not entries:
        return "no cached teacher outputs"
    rows = [("key", "status", "examples", "taps", "dtype", "seq", "size", "created")]
    for e in entries:
        status = "ok" if e["complete"] else (
            f"partial {e['shards_done']}/{e['num_shards'] or '?'}")
        rows.append((
            e["key"], status, str(e["num_examples"] or "?"),
            ",".join(e["taps"]) or "?", str(e["dtype"] or "?"),
            str(e["sequence_length"] or "?"), format_size(e["bytes"]),
            e["created"],
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    total = sum(e["bytes"] for e in entries)
    lines.append(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, "
                 f"{format_size(total)}")
    return "\n".join(lines)
