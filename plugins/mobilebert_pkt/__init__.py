"""`mobilebert-pkt`: MobileBERT's layer-wise knowledge transfer (Sun et al. 2020).

Feature-map and attention transfer, layer by layer (progressive), all layers
at once as auxiliary losses, or jointly before a task stage; then soft-target
distillation of the logits.
"""

import kdplug
from kdplug_plugins.mobilebert_pkt.mobilebert_pkt_method import MobileBertPKTMethod


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(MobileBertPKTMethod)
