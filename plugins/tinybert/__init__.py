"""`tinybert`: TinyBERT's two-stage transformer distillation (Jiao et al. 2020)."""

import kdplug
from kdplug_plugins.tinybert.tinybert_method import TinyBertMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(TinyBertMethod)
