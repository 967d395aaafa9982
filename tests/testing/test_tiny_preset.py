"""`kdplug.testing.write_tiny_preset`: the same arguments, the same bytes."""

import keras
import keras_hub
import numpy as np

from kdplug import testing
from kdplug.storage import fingerprint_path


def test_the_same_arguments_write_the_same_bytes_and_seed(tmp_path):
    first = testing.write_tiny_preset(tmp_path / "a", num_layers=2)
    after_first = keras.random.uniform((3,), seed=None)
    second = testing.write_tiny_preset(tmp_path / "b", num_layers=2)
    after_second = keras.random.uniform((3,), seed=None)
    # a second save of a freshly built model would be named bert_backbone_1
    assert fingerprint_path(first) == fingerprint_path(second)
    np.testing.assert_array_equal(after_first, after_second)  # the global seed, reset
    other = testing.write_tiny_preset(tmp_path / "c", num_layers=2, seed=1)
    assert fingerprint_path(other) != fingerprint_path(first)
    backbone = keras_hub.models.Backbone.from_preset(second)
    assert backbone.num_layers == 2
    # written over an existing preset: the new arguments' files
    testing.write_tiny_preset(tmp_path / "a", num_layers=2, seed=1)
    assert fingerprint_path(first) == fingerprint_path(other)
