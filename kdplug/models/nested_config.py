"""`from_config` support for models whose config holds serialized models."""

import keras


def deserialize_nested(config, key):
    """A copy of `config` with `config[key]` deserialized to a Keras object.

    Examples:

    ```python
    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_nested(config, "backbone"))
    ```
    """
    config = dict(config)
    config[key] = keras.saving.deserialize_keras_object(config[key])
    return config
