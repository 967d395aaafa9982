"""Built-in student architectures."""

import kdplug
from kdplug_plugins.students.bilstm import BiLstmStudent
from kdplug_plugins.students.bilstm_siamese import BiLstmSiameseStudent
from kdplug_plugins.students.bottleneck import BottleneckStudent
from kdplug_plugins.students.hub import HubStudent
from kdplug_plugins.students.narrow import NarrowStudent
from kdplug_plugins.students.truncated import TruncatedStudent


@kdplug.hookimpl
def kdplug_register_students(register):
    register(TruncatedStudent)
    register(NarrowStudent)
    register(BottleneckStudent)
    register(BiLstmStudent)
    register(BiLstmSiameseStudent)
    register(HubStudent)
