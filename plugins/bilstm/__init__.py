"""`bilstm` and `bilstm-siamese`: Tang et al. (2019), BERT -> BiLSTM.

`alpha * hard CE + (1 - alpha) * MSE(teacher logits, student logits)` into a
single-layer BiLSTM (`bilstm`) or its siamese sentence-pair form
(`bilstm-siamese`).
"""

import kdplug
from kdplug_plugins.bilstm.bilstm_method import BiLstmMethod
from kdplug_plugins.bilstm.bilstm_siamese_method import BiLstmSiameseMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(BiLstmMethod)
    register(BiLstmSiameseMethod)
