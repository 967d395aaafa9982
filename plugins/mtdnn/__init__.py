"""`mtdnn-ensemble`: multi-task distillation from per-task teacher ensembles
(Liu et al. 2019, MT-DNN-KD)."""

import kdplug
from kdplug_plugins.mtdnn.mtdnn_method import MTDNNEnsembleMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(MTDNNEnsembleMethod)
