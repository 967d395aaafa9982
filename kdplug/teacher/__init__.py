"""The teacher: loading it, fine-tuning it (cached) with an objective, the
teacher-output cache and its administration, the teacher pipeline.

The cache's layout and administration (`cache_admin`) need no TensorFlow;
the rest is imported on first use.

Examples:

```python
from kdplug.teacher import TeacherCache, load_teacher

teacher, tokenizer, source = load_teacher(config.teacher, num_classes=2)
extra = TeacherCache(teacher, encoder, splits["train"], ["logits"]).get()
```
"""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

if TYPE_CHECKING:  # loaded on first use (`lazy_exports`)
    from kdplug.config.sources import PACKAGE_PREFIX
    from kdplug.config.sources import resolve_source
    from kdplug.teacher.cache_admin import MANIFEST
    from kdplug.teacher.cache_admin import OUTPUTS_FOLDER
    from kdplug.teacher.cache_admin import SHARD
    from kdplug.teacher.cache_admin import format_entries
    from kdplug.teacher.cache_admin import list_entries
    from kdplug.teacher.cache_admin import remove
    from kdplug.teacher.cache_admin import remove_all
    from kdplug.teacher.finetune import TeacherFinetuner
    from kdplug.teacher.fingerprints import teacher_fingerprint
    from kdplug.teacher.loading import check_teacher
    from kdplug.teacher.loading import load_classifier
    from kdplug.teacher.loading import load_teacher
    from kdplug.teacher.objectives import ClassificationObjective
    from kdplug.teacher.objectives import MultiLabelObjective
    from kdplug.teacher.objectives import RegressionObjective
    from kdplug.teacher.objectives import TokenClassificationObjective
    from kdplug.teacher.output_cache import TeacherCache
    from kdplug.teacher.pipeline import TeacherPipeline
    from kdplug.teacher.teacher_source import TeacherSource

__getattr__, __dir__, __all__ = lazy_exports(__name__)
