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

from kdplug._lazy import lazy_exports

_LAZY = {
    "load_teacher": "kdplug.teacher.loading",
    "resolve_source": "kdplug.teacher.sources",
    "check_teacher": "kdplug.teacher.loading",
    "PACKAGE_PREFIX": "kdplug.teacher.loading",
    "TeacherFinetuner": "kdplug.teacher.finetune",
    "ClassificationObjective": "kdplug.teacher.objectives",
    "RegressionObjective": "kdplug.teacher.objectives",
    "TeacherCache": "kdplug.teacher.output_cache",
    "TeacherPipeline": "kdplug.teacher.pipeline",
    "list_entries": "kdplug.teacher.cache_admin",
    "remove": "kdplug.teacher.cache_admin",
    "remove_all": "kdplug.teacher.cache_admin",
    "format_entries": "kdplug.teacher.cache_admin",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
