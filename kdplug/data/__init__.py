"""Data: readers, in-memory `Examples`, encoders to `tf.data`, masking,
augmentation and transfer sets.

`Examples`, the readers, augmentation and transfer sets do not need
TensorFlow; `TextEncoder`, `WordEncoder` and masking do, and are imported on
first use.
"""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports
from kdplug.data.augmentation import Augmenter
from kdplug.data.augmentation import detokenize
from kdplug.data.augmentation import is_special
from kdplug.data.augmentation import is_word
from kdplug.data.augmentation import match_case
from kdplug.data.augmentation import tokenize
from kdplug.data.examples import Examples
from kdplug.data.label_map import LabelMap
from kdplug.data.label_kinds import text_field
from kdplug.data.qa_windows import QAWindows
from kdplug.data.qa_windows import context_words
from kdplug.data.qa_windows import qa_windows
from kdplug.data.qa_windows import word_tokenizer
from kdplug.data.readers import Splits
from kdplug.data.readers import examples_from_dataset
from kdplug.data.readers import read_splits
from kdplug.data.row_files import at_row
from kdplug.data.row_files import read_rows
from kdplug.data.split_sources import TFDS_PREFIX
from kdplug.data.split_sources import load_source
from kdplug.data.split_sources import per_split_parts
from kdplug.data.split_sources import split_parts
from kdplug.data.squad_examples import QAExample
from kdplug.data.squad_examples import qa_examples
from kdplug.data.squad_examples import qa_summary
from kdplug.data.squad_examples import read_squad_json
from kdplug.data.text_corpus import TextCorpus
from kdplug.data.transfer_set import AugmentStep
from kdplug.data.transfer_set import build_transfer_set

if TYPE_CHECKING:  # they need TensorFlow: loaded on first use (`lazy_exports`)
    from kdplug.data.length_buckets import LengthBuckets
    from kdplug.data.length_buckets import batches_by_length
    from kdplug.data.length_buckets import outputs_by_length
    from kdplug.data.text_encoder import TextEncoder
    from kdplug.data.trimming import real_lengths
    from kdplug.data.trimming import trim_to_longest
    from kdplug.data.word_encoder import WordEncoder

__getattr__, __dir__, __all__ = lazy_exports(__name__)
