"""Student builders: explicit arguments in, a fully trainable model out."""

from kdplug._lazy import lazy_exports

# Imported on first use (they need Keras), so that a plugin can name them
# at import time without starting TensorFlow (`kdplug plugins`, `validate`).
__getattr__, __dir__ = lazy_exports(__name__, {
    "bilstm": "kdplug.students.bilstm",
    "BOTTLENECK_PRESETS": "kdplug.students.bottleneck_bert:PRESETS",
    "bottleneck_bert": "kdplug.students.bottleneck_bert",
    "narrow_bert": "kdplug.students.narrow_bert",
    "select_layers": "kdplug.students.truncated_bert",
    "truncated_bert": "kdplug.students.truncated_bert",
    "truncated_hub": "kdplug.students.truncated_hub",
    "force_trainable": "kdplug.students.utils",
})
