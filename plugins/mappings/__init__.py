"""Built-in layer-mapping strategies (TinyBERT uniform, PKD skip/last, custom)."""

import kdplug
from kdplug.mapping import CustomMapping
from kdplug.mapping import LastMapping
from kdplug.mapping import SkipMapping
from kdplug.mapping import UniformMapping


@kdplug.hookimpl
def kdplug_register_mappings(register):
    register(UniformMapping)
    register(SkipMapping)
    register(LastMapping)
    register(CustomMapping)
