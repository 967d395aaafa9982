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

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports
from kdplug.mapping.custom_mapping import CustomMapping
from kdplug.mapping.last_mapping import LastMapping
from kdplug.mapping.layer_mapping import EMBEDDINGS
from kdplug.mapping.layer_mapping import LayerMapping
from kdplug.mapping.skip_mapping import SkipMapping
from kdplug.mapping.uniform_mapping import UniformMapping

# Projections and head matching need Keras: imported on first use
# (`lazy_exports`), so that the strategies (and the configs naming them)
# load without TensorFlow.
if TYPE_CHECKING:
    from kdplug.mapping.head_reduction import HEAD_REDUCTIONS
    from kdplug.mapping.head_reduction import match_heads
    from kdplug.mapping.head_reduction import reduce_heads
    from kdplug.mapping.projection import Projection
    from kdplug.mapping.projection_builder import build_projections
    from kdplug.mapping.projection_builder import check_tap_pair

__getattr__, __dir__, __all__ = lazy_exports(__name__)
