import datetime
import os

import numpy as np

from kdplug import storage
from kdplug.teacher import MANIFEST
from kdplug.teacher import OUTPUTS_FOLDER
from kdplug.teacher import SHARD
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk

FORMAT = "cmlm-topk-1"


class TopKCache:
    """The C-MLM teacher's top-K soft labels of one split, on disk.

    An entry of kdplug's teacher-output cache (`<cache root>/outputs/<key>/`,
    listed and removed by `kdplug cache ls / rm`): one shard
    (`shard-00000.npz`: `topk_ids` int32, `topk_probs` float16, `(n,
    positions, K)`) and the manifest, written last. The key hashes what
    the soft labels depend on: the fine-tuned teacher's weights, the
    examples, the tokenisation and the extraction settings.

    Args:
        key_parts: a JSON-able dict (see `CmlmSeq2SeqRunner`); its
            fingerprint is the key.
        root: the cache root (default `kdplug.storage.cache_root()`).

    Examples:

    ```python
    cache = TopKCache({"teacher": fp, "examples": ..., "top_k": 8})
    arrays = cache.load() or cache.save(*extractor.extract(teacher_arrays))
    ```
    """

    def __init__(self, key_parts, root=None):
        self.key = storage.fingerprint(key_parts)
        self.path = os.path.join(root or storage.cache_root(), OUTPUTS_FOLDER, self.key)

    def load(self):
        """`(ids, probs)` of a complete entry, else None."""
        manifest = storage.read_json(os.path.join(self.path, MANIFEST))
        shard = os.path.join(self.path, SHARD.format(0))
        if not (isinstance(manifest, dict) and manifest.get("format") == FORMAT
                and os.path.isfile(shard)):
            return None
        try:
            with np.load(shard) as arrays:
                return arrays[sk.TOPK_IDS], arrays[sk.TOPK_PROBS]
        except (OSError, KeyError, ValueError):
            return None

    def save(self, ids, probs):
        """Writes the entry; returns `(ids, probs)`."""
        storage.mark_entry(self.path, "teacher-outputs", self.key)
        storage.write_npz(os.path.join(self.path, SHARD.format(0)),
                          {sk.TOPK_IDS: ids, sk.TOPK_PROBS: probs})
        storage.write_json(os.path.join(self.path, MANIFEST), {
            "key": self.key, "format": FORMAT, "complete": True,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
            "num_examples": int(ids.shape[0]), "num_shards": 1,
            "taps": list(sk.TOPK_TAPS), "dtype": str(probs.dtype),
            "sequence_length": int(ids.shape[1]), "top_k": int(ids.shape[2]),
        })
        return ids, probs
