"""`teacher.pooling`: what the teacher's sentence head reads of its last
layer, with `auto` resolved from the checkpoint (no TensorFlow).

sentence-transformers checkpoints (the packaged MiniLM-L6 all-* weights
among them) record how they were trained to pool in their Pooling module's
`config.json` (`1_Pooling/config.json`, named by `modules.json`):

```json
{"word_embedding_dimension": 384, "pooling_mode_cls_token": false,
 "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false}
```

Examples:

```python
resolve_pooling("auto", "/models/all-MiniLM-L6-v2")   # "mean"
resolve_pooling("auto", "bert_tiny_en_uncased")       # "cls" (a preset name)
resolve_pooling("mean", anything)                     # "mean"
```
"""

import json
import logging
import os

from kdplug.errors import ConfigError

log = logging.getLogger(__name__)

POOLING_MODULE = "sentence_transformers.models.Pooling"
TRANSFORMER_MODULE = "sentence_transformers.models.Transformer"
POOLING_FOLDER = "1_Pooling"  # where it is when no modules.json says
# sentence-transformers' pooling flags kdplug's heads read, and as what.
MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean"}


def resolve_pooling(pooling, source):
    """`"cls"` or `"mean"`: `teacher.pooling` as the teacher built from
    `source` (the resolved `teacher.source`) reads its sentence.

    `auto` is the checkpoint's own pooling (`checkpoint_pooling`) when
    `source` is a local folder (a package's folder too), and `"cls"` where
    none is found (a keras-hub preset name, a `.keras` file, a folder
    without a sentence-transformers Pooling module).

    Args:
        pooling: `"cls"`, `"mean"` or `"auto"`.
        source: a local path or a keras-hub preset name.
    """
    if pooling != "auto":
        return pooling
    found = checkpoint_pooling(source) if os.path.isdir(source) else None
    return found or "cls"


def checkpoint_pooling(folder):
    """The pooling the sentence-transformers checkpoint in `folder` was
    trained with: `"mean"` (`pooling_mode_mean_tokens`) or `"cls"`
    (`pooling_mode_cls_token`); None when there is no Pooling module, or
    when it asks for a pooling kdplug's heads do not offer (max, weighted
    mean, last token, several at once; logged as a warning).

    The module is the `modules.json` entry of type
    `sentence_transformers.models.Pooling`, in `folder` or, when `folder`
    is its parent's Transformer module (an older layout: `0_Transformer/`
    beside `1_Pooling/`), in the parent; without a `modules.json`,
    `folder/1_Pooling`.

    Raises:
        ConfigError: naming `teacher.pooling`, when one of those files is
            not readable JSON of the expected shape.

    Examples:

    >>> checkpoint_pooling("/nonexistent") is None
    True
    """
    path = _pooling_config(os.path.abspath(folder))
    if path is None:
        return None
    flags = _read_json(path, dict)
    modes = sorted(k for k, v in flags.items()
                   if k.startswith("pooling_mode_") and v is True)
    if len(modes) == 1 and modes[0] in MODES:
        return MODES[modes[0]]
    log.warning("teacher.pooling: auto: %s asks for %s, which kdplug's heads do not "
                "offer (cls or mean); the head reads [CLS]", path,
                " + ".join(modes) or "no pooling")
    return None


def _pooling_config(folder):
    """The path of `folder`'s Pooling module's `config.json`, or None."""
    for root in (folder, os.path.dirname(folder)):
        modules_file = os.path.join(root, "modules.json")
        if not os.path.isfile(modules_file):
            continue
        modules = [m for m in _read_json(modules_file, list) if isinstance(m, dict)]
        path_of = {m.get("type"): os.path.normpath(os.path.join(root, m.get("path") or ""))
                   for m in modules}
        if root != folder and path_of.get(TRANSFORMER_MODULE) != folder:
            continue  # the parent is another checkpoint's
        path = os.path.join(path_of.get(POOLING_MODULE, root), "config.json")
        return path if POOLING_MODULE in path_of and os.path.isfile(path) else None
    path = os.path.join(folder, POOLING_FOLDER, "config.json")
    return path if os.path.isfile(path) else None


def _read_json(path, kind):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not readable JSON ({e})",
                          field="teacher.pooling") from None
    if not isinstance(data, kind):
        raise ConfigError(f"{path}: expected a JSON {kind.__name__}",
                          field="teacher.pooling")
    return data


def pooling_key(teacher_cfg, source):
    """What the teacher's pooling adds to a cache key: `{"pooling": "mean"}`
    when it reads other than [CLS], nothing for `cls` (so the keys of
    teachers fine-tuned before the option existed stay what they were).

    Examples:

    ```python
    key = fingerprint({"teacher": files, **pooling_key(config.teacher, source)})
    ```
    """
    pooling = resolve_pooling(getattr(teacher_cfg, "pooling", "cls"), source)
    return {} if pooling == "cls" else {"pooling": pooling}
