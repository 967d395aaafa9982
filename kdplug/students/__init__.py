"""Student builders: explicit arguments in, a fully trainable model out."""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

# Imported on first use (they need Keras: `lazy_exports`), so that a plugin
# can name them at import time without starting TensorFlow (`kdplug
# plugins`, `validate`).
if TYPE_CHECKING:
    from kdplug.students.bilstm import bilstm
    from kdplug.students.bottleneck_bert import PRESETS as BOTTLENECK_PRESETS
    from kdplug.students.bottleneck_bert import bottleneck_bert
    from kdplug.students.narrow_bert import narrow_bert
    from kdplug.students.truncated_bert import select_layers
    from kdplug.students.truncated_bert import truncated_bert
    from kdplug.students.truncated_hub import truncated_hub
    from kdplug.students.utils import force_trainable
    from kdplug.students.utils import teacher_attribute

__getattr__, __dir__, __all__ = lazy_exports(__name__)
