"""`fastbert`: self-distilling BERT with adaptive inference (Liu et al. 2020)."""

import kdplug
from kdplug_plugins.fastbert.fastbert_method import FastBERTMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(FastBERTMethod)
