"""`pkd`: Patient Knowledge Distillation (Sun et al. 2019), PKD-Skip and PKD-Last."""

import kdplug
from kdplug_plugins.pkd.pkd_method import PKDMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(PKDMethod)
