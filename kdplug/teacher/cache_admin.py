"""The cache on disk: its layout, and listing and removing entries
(`kdplug cache ls` / `kdplug cache rm`; see docs/cache.md).

`cache_root()` holds three kinds of entries, one folder each, named by key:

| folder | kind | written by |
|---|---|---|
| `outputs/<key>/` | `teacher-outputs` | `kdplug.teacher.TeacherCache` |
| `teachers/<key>/` | `teacher` | `kdplug.teacher.TeacherFinetuner` |
| `transfer/<key>/` | `transfer-set` | `kdplug.data.build_transfer_set` |

Every entry carries a marker file (`.kdplug-entry`, written when the entry is
created); only marked entries (and kdplug 0.1 entries, recognised by their
content) are ever removed. Anything else found there, including symlinks,
is listed as `foreign` and left alone.

No TensorFlow here: the cache commands answer without loading it.
"""

import os
import re
import shutil

from kdplug import storage
from kdplug.data.transfer_set import TRANSFER_FILE
from kdplug.data.transfer_set import TRANSFER_FOLDER
from kdplug.errors import KdplugError
from kdplug.storage import cache_root
from kdplug.storage import format_size

# The on-disk layout of a teacher-outputs entry (`TeacherCache` writes it).
# Format 2: shard k holds the examples at positions `order[k*size:(k+1)*size]`
# of a seeded permutation (each shard a random sample of the split, its
# example indices stored beside the taps); format 1 held them in file order.
FORMAT_VERSION = 2
OUTPUTS_FOLDER = "outputs"
MANIFEST = "manifest.json"
INFO = "info.json"
SHARD = "shard-{:05d}.npz"
SHARD_RE = re.compile(r"^shard-(\d{5})\.npz$")
_KEY_RE = re.compile(r"^[0-9a-f]{1,64}$")

# A fine-tuned teacher's entry (`TeacherFinetuner` writes it).
TEACHER_WEIGHTS = "model.weights.h5"
TEACHER_INFO = "info.json"
# written with the weights, before the dev split is evaluated; gone once
# info.json is written
TEACHER_TRAINED = "trained.json"

KINDS = {OUTPUTS_FOLDER: "teacher-outputs", "teachers": "teacher",
         TRANSFER_FOLDER: "transfer-set"}


def list_entries(root=None, kinds=None):
    """Every entry under `root` (default `cache_root()`), oldest first.

    Args:
        root: the cache root.
        kinds: only these kinds (`teacher-outputs`, `teacher`,
            `transfer-set`); default all.

    Returns:
        A list of dicts: `kind`, `key`, `path`, `status` (`ok`,
        `partial 2/5`, `foreign`, `foreign (symlink)`), `owned` (carries
        the marker, or is a kdplug 0.1 entry), `bytes`, `created`,
        `detail` (a short description), plus for teacher outputs
        `complete`, `num_examples`, `shards_done`, `num_shards`, `taps`,
        `dtype` and `sequence_length`.
    """
    root = root or cache_root()
    entries = []
    for folder, kind in KINDS.items():
        if kinds is not None and kind not in kinds:
            continue
        top = os.path.join(root, folder)
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for name in sorted(os.listdir(top)):
            if name.startswith(".") and storage.TMP_MARK in name:
                continue  # a writer's temporary
            entries.append(_entry(kind, name, os.path.join(top, name)))
    entries.sort(key=lambda e: (e["created"], e["kind"], e["key"]))
    return entries


def remove(key, root=None):
    """Deletes one entry, named by its key or a unique prefix of it.

    Returns the removed entry's dict (as `list_entries()` gives it). Foreign
    entries are never removed.
    """
    key = str(key).strip()
    if not _KEY_RE.match(key):
        raise KdplugError(f"not a cache key: {key!r} (expected hex digits)")
    entries = list_entries(root)
    matches = [e for e in entries if e["key"] == key] or [
        e for e in entries if e["key"].startswith(key)
    ]
    if not matches:
        raise KdplugError(f"no cache entry {key!r} (see `kdplug cache ls`)")
    if len(matches) > 1:
        keys = ", ".join(f"{e['kind']} {e['key']}" for e in matches)
        raise KdplugError(f"cache key prefix {key!r} is ambiguous: {keys}")
    entry = matches[0]
    if not entry["owned"]:
        raise KdplugError(
            f"{entry['path']} was not created by kdplug ({entry['status']}: no "
            f"{storage.ENTRY_MARKER} marker); left alone, remove it yourself")
    _delete(entry)
    return entry


def remove_all(root=None):
    """Deletes every entry kdplug created; returns `(removed, foreign)`
    lists of entry dicts (foreign ones are left in place)."""
    entries = list_entries(root)
    removed = [e for e in entries if e["owned"]]
    for entry in removed:
        _delete(entry)
    return removed, [e for e in entries if not e["owned"]]


def format_entries(entries):
    """A plain-text table of `list_entries()` for `kdplug cache ls`."""
    if not entries:
        return f"no cache entries in {cache_root()}"
    rows = [("kind", "key", "status", "size", "created", "what")]
    for e in entries:
        rows.append((e["kind"], e["key"], e["status"], format_size(e["bytes"]),
                     e["created"] or "?", e["detail"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    owned = [e for e in entries if e["owned"]]
    total = sum(e["bytes"] for e in owned)
    lines.append(f"{len(owned)} entr{'y' if len(owned) == 1 else 'ies'}, "
                 f"{format_size(total)}")
    foreign = len(entries) - len(owned)
    if foreign:
        lines.append(f"{foreign} foreign item(s) not created by kdplug: never "
                     "removed by `kdplug cache rm`")
    return "\n".join(lines)


# ------------------------------------------------------------------ helpers
def _entry(kind, name, path):
    entry = {"kind": kind, "key": name, "path": path, "owned": False,
             "bytes": 0, "created": "", "detail": "", "status": "foreign"}
    if os.path.islink(path):
        entry["status"] = "foreign (symlink)"
        entry["detail"] = f"-> {os.readlink(path)}"
        return entry
    entry["bytes"] = storage.tree_size(path)
    marker = storage.entry_marker(path) if os.path.isdir(path) else None
    if marker is not None and (marker.get("kind") != kind or marker.get("key") != name):
        marker = None  # a marker copied from elsewhere does not make it ours
    describe = _DESCRIBE[kind]
    details = describe(path, name, marker is not None)
    if details is None and marker is None:
        return entry
    entry.update(owned=True, status="ok", created=(marker or {}).get("created", ""))
    entry.update(details or {})
    if marker is None:
        entry["detail"] = (entry["detail"] + " (kdplug 0.1 entry)").strip()
    return entry


def _outputs(path, name, marked):
    """A teacher-outputs entry's facts; None when it is not one (0.1
    entries have no marker but an info.json naming their own key)."""
    if not os.path.isdir(path):
        return None
    manifest = storage.read_json(os.path.join(path, MANIFEST))
    info = manifest or storage.read_json(os.path.join(path, INFO)) or {}
    if not isinstance(info, dict) or info.get("key") != name:
        if not marked:
            return None
        info = {}
    done = sum(1 for f in os.listdir(path) if SHARD_RE.match(f))
    complete = bool(manifest)
    taps = info.get("taps", [])
    return {
        "complete": complete,
        "status": "ok" if complete else (
            f"partial {done}/{info.get('num_shards') or '?'}"),
        "created": info.get("created", ""),
        "num_examples": info.get("num_examples"),
        "shards_done": done,
        "num_shards": info.get("num_shards"),
        "taps": taps,
        "dtype": info.get("dtype"),
        "sequence_length": info.get("sequence_length"),
        "detail": (f"{info.get('num_examples') or '?'} examples, taps "
                   f"{','.join(taps) or '?'}, {info.get('dtype') or '?'}, "
                   f"seq {info.get('sequence_length') or '?'}"),
    }


def _teacher(path, name, marked):
    """A fine-tuned teacher's facts; None when it is not one (0.1 entries
    have no marker but their weights and info.json)."""
    if not os.path.isdir(path):
        return None
    weights = os.path.isfile(os.path.join(path, TEACHER_WEIGHTS))
    info = storage.read_json(os.path.join(path, TEACHER_INFO))
    finished = weights and isinstance(info, dict)
    if not marked and not (finished and _KEY_RE.match(name)):
        return None
    if not finished:
        evaluating = weights and os.path.isfile(os.path.join(path, TEACHER_TRAINED))
        return {"status": "partial", "detail": "fine-tuned, not evaluated yet"
                if evaluating else "fine-tuning not finished"}
    score = info.get("validation_accuracy")
    return {"detail": "fine-tuned teacher" + (
        f", validation accuracy {score:.4f}" if isinstance(score, (int, float)) else "")}


def _transfer(path, name, marked):
    """A transfer set's facts (a folder, or a kdplug 0.1 `<key>.json` file)."""
    if os.path.isfile(path):
        stem = name[:-len(".json")] if name.endswith(".json") else ""
        data = storage.read_json(path) if _KEY_RE.match(stem) else None
        if not (isinstance(data, dict) and "original" in data and "texts" in data):
            return None
        return {"detail": f"{len(data['texts'])} augmented examples"}
    data = storage.read_json(os.path.join(path, TRANSFER_FILE))
    if not isinstance(data, dict):
        return {"status": "partial", "detail": "not written yet"} if marked else None
    return {"detail": f"{len(data.get('texts', []))} augmented examples"}


_DESCRIBE = {"teacher-outputs": _outputs, "teacher": _teacher,
             "transfer-set": _transfer}


def _delete(entry):
    path = entry["path"]
    if os.path.islink(path):  # never followed (list_entries marks them foreign)
        raise KdplugError(f"{path} is a symlink; left alone")
    if os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.remove(path)
