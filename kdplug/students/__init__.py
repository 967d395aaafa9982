"""Student builders: explicit arguments in, a fully trainable model out."""

from kdplug.students.bilstm import bilstm
from kdplug.students.bottleneck_bert import PRESETS as BOTTLENECK_PRESETS
from kdplug.students.bottleneck_bert import bottleneck_bert
from kdplug.students.narrow_bert import narrow_bert
from kdplug.students.truncated_bert import select_layers
from kdplug.students.truncated_bert import truncated_bert
from kdplug.students.utils import force_trainable
