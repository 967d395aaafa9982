"""The experiment config: typed sections, the schema parser, loading.

Examples:

```python
from kdplug.config import load_config

config = load_config("configs/quickstart.yaml")
config.method.name, config.method_config.temperature
```
"""

from kdplug.config.experiment_config import ExperimentConfig
from kdplug.config.experiment_config import PluginSection
from kdplug.config.loading import config_from_dict
from kdplug.config.loading import load_config
from kdplug.config.loading import parse_augment
from kdplug.config.ranges import Fraction
from kdplug.config.ranges import Items
from kdplug.config.ranges import NonNegativeFloat
from kdplug.config.ranges import NonNegativeInt
from kdplug.config.ranges import PositiveFloat
from kdplug.config.ranges import PositiveInt
from kdplug.config.ranges import Probability
from kdplug.config.ranges import Range
from kdplug.config.refs import MappingRef
from kdplug.config.refs import PluginRef
from kdplug.config.schema import parse
from kdplug.config.schema import to_dict
from kdplug.config.sections import AugmentEntry
from kdplug.config.sections import CacheConfig
from kdplug.config.sections import DataConfig
from kdplug.config.sections import EvaluationConfig
from kdplug.config.sections import ExportConfig
from kdplug.config.sections import FinetuneConfig
from kdplug.config.sections import LengthBucketsConfig
from kdplug.config.sections import ScheduleConfig
from kdplug.config.sections import TeacherConfig
from kdplug.config.sections import TeacherPipelineConfig
from kdplug.config.sections import TrainingConfig
from kdplug.config.sources import PACKAGE_PREFIX
from kdplug.config.sources import resolve_source

__all__ = [
    "AugmentEntry", "CacheConfig", "DataConfig", "EvaluationConfig", "ExperimentConfig",
    "ExportConfig", "FinetuneConfig", "Fraction", "Items", "LengthBucketsConfig",
    "MappingRef",
    "NonNegativeFloat", "NonNegativeInt", "PACKAGE_PREFIX", "PluginRef",
    "PluginSection", "PositiveFloat", "PositiveInt", "Probability", "Range",
    "ScheduleConfig", "TeacherConfig", "TeacherPipelineConfig", "TrainingConfig",
    "config_from_dict", "load_config", "parse", "parse_augment", "resolve_source",
    "to_dict",
]
