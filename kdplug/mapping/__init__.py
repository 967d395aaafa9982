"""Layer mapping (which teacher layer teaches which student layer) and the
projections that make widths comparable.

Strategies are registered through the `kdplug_register_mappings` hook (the
built-in ones by `kdplug_plugins.mappings`), so configs can name them.

Examples:

```python
from kdplug import mapping

pairs = mapping.UniformMapping().tap_pairs(teacher, student, ("hidden",))
projections = mapping.build_projections(teacher, student, pairs)
```
"""

from kdplug._lazy import lazy_exports
from kdplug.mapping.custom_mapping import CustomMapping
from kdplug.mapping.last_mapping import LastMapping
from kdplug.mapping.layer_mapping import EMBEDDINGS
from kdplug.mapping.layer_mapping import LayerMapping
from kdplug.mapping.skip_mapping import SkipMapping
from kdplug.mapping.uniform_mapping import UniformMapping

# Projections and head matching need Keras: imported on first use, so that
# the strategies (and the configs naming them) load without TensorFlow.
__getattr__, __dir__ = lazy_exports(__name__, {
    "build_projections": "kdplug.mapping.projection_builder",
    "check_tap_pair": "kdplug.mapping.projection_builder",
    "HEAD_REDUCTIONS": "kdplug.mapping.head_reduction",
    "match_heads": "kdplug.mapping.head_reduction",
    "reduce_heads": "kdplug.mapping.head_reduction",
    "Projection": "kdplug.mapping.projection",
})
