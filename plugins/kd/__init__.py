"""`kd`: vanilla knowledge distillation (Hinton et al. 2015; Tang et al. 2019)."""

import kdplug
from kdplug_plugins.kd.kd_method import KDMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(KDMethod)
