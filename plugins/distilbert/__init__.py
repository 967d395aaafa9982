"""`distilbert`: DistilBERT's triple loss (Sanh et al. 2019), adapted to classifiers."""

import kdplug
from kdplug_plugins.distilbert.distilbert_method import DistilBertMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(DistilBertMethod)
