"""`run_serialization_test`: a layer's config and saving round trips."""

import json
import os
import tempfile
from typing import Any

import keras
import numpy as np

# What a Keras layer sets on itself, not from its config.
_KERAS_ATTRIBUTES = {"built", "autocast", "supports_jit", "call_signature_parameters",
                     "activity_regularizer"}


def run_serialization_test(layer: keras.layers.Layer,
                           keras_file: bool = True) -> keras.layers.Layer:
    """Checks that a layer (a kdplug `Term`, a projection, a model part)
    comes back the same from its config and from a saved file, the way a
    saved `Distiller` or student brings it back.

    Each of three round trips must give an object of the layer's class with
    the same serialized config, the same public plain attributes (strings,
    numbers, booleans, None and lists, tuples and dicts of them: what the
    constructor stored, so a config that forgets an argument fails here
    even though the configs agree), and weights of the same shapes, dtypes
    and trainability:

    1. `type(layer).from_config(layer.get_config())`;
    2. `keras.saving.serialize_keras_object` through JSON and
       `keras.saving.deserialize_keras_object` (fails when the class is not
       registered with `@keras.saving.register_keras_serializable`);
    3. with `keras_file`, `keras.saving.save_model` to a `.keras` file and
       `keras.saving.load_model`, which must also restore the weights'
       values.

    Args:
        layer: the `keras.layers.Layer` to check, built (a kdplug `Term` is
            built by its constructor).
        keras_file: bool. Whether to save and load a `.keras` file too.

    Returns:
        The layer rebuilt by `from_config`, for the test's own assertions.

    Examples:

    ```python
    from kdplug.testing import run_serialization_test

    clone = run_serialization_test(MyTerm(temperature=2.0, weight=0.5))
    assert float(clone.temperature.numpy()) == 2.0
    ```
    """
    cls = type(layer)
    config = _config_json(layer)
    clone = cls.from_config(layer.get_config())
    _assert_same(layer, clone, config, "from_config(get_config())")

    serialized = json.loads(json.dumps(keras.saving.serialize_keras_object(layer)))
    try:
        revived = keras.saving.deserialize_keras_object(serialized)
    except TypeError as error:
        raise AssertionError(
            f"{cls.__name__} did not deserialize ({error}): register it with "
            "@keras.saving.register_keras_serializable(package=...)") from error
    _assert_same(layer, revived, config, "deserialize_keras_object")

    if keras_file:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "layer.keras")
            keras.saving.save_model(layer, path)
            loaded = keras.saving.load_model(path)
        _assert_same(layer, loaded, config, "a .keras file")
        for saved, back in zip(layer.weights, loaded.weights):
            np.testing.assert_array_equal(
                keras.ops.convert_to_numpy(back), keras.ops.convert_to_numpy(saved),
                err_msg=f"{cls.__name__}: weight {saved.path} from a .keras file")
    return clone


def _config_json(layer: keras.layers.Layer) -> str:
    """The layer's config, nested layers serialized, as sorted JSON."""
    return json.dumps(keras.saving.serialize_keras_object(layer)["config"],
                      sort_keys=True)


def _assert_same(layer: keras.layers.Layer, other: Any, config: str, how: str) -> None:
    cls = type(layer)
    assert type(other) is cls, (
        f"{how} gave a {type(other).__name__}, not a {cls.__name__}")
    assert _config_json(other) == config, (
        f"{cls.__name__}: {how} changed the config\n{config}\n"
        f"{_config_json(other)}")
    mine, theirs = _plain_attributes(layer), _plain_attributes(other)
    assert mine == theirs, (
        f"{cls.__name__}: {how} changed attributes (does get_config() return "
        f"every constructor argument?): {mine} != {theirs}")
    assert _weight_specs(other) == _weight_specs(layer), (
        f"{cls.__name__}: {how} changed the weights (shape, dtype, trainable): "
        f"{_weight_specs(layer)} != {_weight_specs(other)}")


def _plain_attributes(layer: keras.layers.Layer) -> dict:
    found = {}
    for name, value in vars(layer).items():
        if name.startswith("_") or name in _KERAS_ATTRIBUTES:
            continue
        plain = _plain(value)
        if plain is not _NOT_PLAIN:
            found[name] = plain
    return found


_NOT_PLAIN = object()


def _plain(value: Any) -> Any:
    """`value` as plain Python (Keras' tracked lists and dicts as lists and
    dicts), or `_NOT_PLAIN` when it holds anything else (a variable, a
    layer, a function)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        items = {k: _plain(v) for k, v in value.items()}
        return _NOT_PLAIN if _NOT_PLAIN in items.values() else items
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else items
    return _NOT_PLAIN


def _weight_specs(layer: keras.layers.Layer) -> list:
    return [(tuple(w.shape), w.dtype, w.trainable) for w in layer.weights]
