"""Taps of any Keras model: kdplug's own models answer `taps()`; any other
`keras.Model` gives its output as `logits` and, when it is functional, the
output of any named layer."""

import weakref

import keras

from kdplug.errors import KdplugError

LOGITS = "logits"
# model -> {tuple of layer names: a functional model returning their outputs}
_FEATURE_MODELS = weakref.WeakKeyDictionary()


def model_taps(model, inputs, names, training=False):
    """`{name: tensor}` of `names` for one batch of `inputs`.

    - A model with `taps(inputs, names, training)` (every kdplug model)
      answers itself.
    - Any other `keras.Model`: `logits` is its output (`model(inputs)`);
      any other name is the output of the layer of that name (as
      `keras.distillation.FeatureDistillation` reads features), which needs
      a functional model (`keras.Model(inputs, outputs)` or `Sequential`):
      a subclassed model has no graph to read a layer's output from.

    The batch may hold more features than the model reads (other models'
    inputs, cached teacher outputs): a functional model gets only its own
    inputs, by name.

    Args:
        model: the teacher or the student.
        inputs: the batch's features, a dict.
        names: the taps wanted.
        training: passed to the model.

    Examples:

    ```python
    student = keras.Sequential([..., keras.layers.Dense(64, name="features"),
                                keras.layers.Dense(2)])
    model_taps(student, batch, ["logits", "features"])
    ```
    """
    if hasattr(model, "taps"):
        return model.taps(inputs, names, training=training)
    names = list(names)
    layers = tuple(sorted(set(names) - {LOGITS}))
    if not layers:
        return {LOGITS: model(_own_inputs(model, inputs), training=training)}
    outputs = _feature_model(model, layers)(_own_inputs(model, inputs), training=training)
    return {name: outputs[name] for name in names}


def _feature_model(model, layers):
    """A functional model sharing `model`'s layers that returns its output
    (`logits`) and the named layers' outputs (cached per model)."""
    cache = _FEATURE_MODELS.setdefault(model, {})
    if layers in cache:
        return cache[layers]
    if not _is_functional(model):
        raise KdplugError(
            f"{type(model).__name__} {model.name!r} has no taps() and is not a "
            f"functional model, so the outputs of its layers {list(layers)} cannot be "
            "read; build it with keras.Model(inputs, outputs) or keras.Sequential, "
            "or give it a taps(inputs, names, training) method")
    known = [layer.name for layer in model.layers]
    missing = [name for name in layers if name not in known]
    if missing:
        raise KdplugError(
            f"model {model.name!r} has no layer {missing[0]!r} to tap; its layers: "
            f"{', '.join(known)} (and 'logits', its output)")
    outputs = {name: model.get_layer(name).output for name in layers}
    outputs[LOGITS] = model.output
    cache[layers] = keras.Model(model.input, outputs, name=f"{model.name}_taps")
    return cache[layers]


def _own_inputs(model, inputs):
    """The part of a batch's features a functional model declares (by its
    inputs' names); everything for other models."""
    if not _is_functional(model) or not isinstance(inputs, dict):
        return inputs
    declared = model.input
    if isinstance(declared, dict):
        return {key: inputs[key] for key in declared}
    if isinstance(declared, (list, tuple)):
        return [inputs[tensor.name] for tensor in declared]
    if declared.name not in inputs:
        raise KdplugError(
            f"model {model.name!r} reads an input named {declared.name!r}, and the "
            f"batch has {', '.join(sorted(inputs))}; name its keras.Input after one "
            "of them (e.g. keras.Input(shape, dtype='int32', name='token_ids'))")
    return inputs[declared.name]


def _is_functional(model):
    """Whether `model` is a functional (or Sequential) Keras model with a
    graph of layers."""
    try:
        model.input  # noqa: B018  (raises for subclassed models)
    except (AttributeError, ValueError):
        return False
    return bool(getattr(model, "_is_graph_network", True)) and hasattr(model, "get_layer")
