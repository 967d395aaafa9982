"""Data: readers, in-memory `Examples`, encoders to `tf.data`, masking,
augmentation and transfer sets.

`Examples`, the readers, augmentation and transfer sets do not need
TensorFlow; `TextEncoder`, `WordEncoder` and masking do, and are imported on
first use.
"""

from kdplug._lazy import lazy_exports
from kdplug.data.examples import Examples
from kdplug.data.label_map import LabelMap
from kdplug.data.readers import Splits
from kdplug.data.readers import examples_from_dataset
from kdplug.data.readers import read_rows
from kdplug.data.readers import read_splits
from kdplug.data.text_corpus import TextCorpus

_LAZY = {
    "LengthBuckets": "kdplug.data.length_buckets",
    "TextEncoder": "kdplug.data.text_encoder",
    "WordEncoder": "kdplug.data.word_encoder",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
