"""`augmenters`: built-in transfer-set augmenters.

- `mask`, `pos-replace`, `ngram`: the three rules of Tang et al. (2019);
- `tang`: their combined one-draw-per-word procedure;
- `contextual`: TinyBERT's masked-LM word replacement (Jiao et al. 2019).

See docs/augmentation.md.
"""

import kdplug
from kdplug_plugins.augmenters.contextual import ContextualAugmenter
from kdplug_plugins.augmenters.mask import MaskAugmenter
from kdplug_plugins.augmenters.ngram import NGramAugmenter
from kdplug_plugins.augmenters.pos_replace import POSReplaceAugmenter
from kdplug_plugins.augmenters.tang import TangAugmenter

AUGMENTERS = (
    MaskAugmenter,
    POSReplaceAugmenter,
    NGramAugmenter,
    TangAugmenter,
    ContextualAugmenter,
)


@kdplug.hookimpl
def kdplug_register_augmenters(register):
    for cls in AUGMENTERS:
        register(cls)
