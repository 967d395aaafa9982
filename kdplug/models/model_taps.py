"""Taps of any Keras model: kdplug's own models answer `taps()`; any other
`keras.Model` gives its output as `logits` and, when it is functional, the
output of any named layer."""

import weakref

import keras

from kdplug import keys
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

    The batch's features are what Keras' `fit` takes: one tensor, a
    tuple or list of a multi-input model's inputs, or a dict, which may
    hold more features than the model reads (other models' inputs, cached
    teacher outputs): a functional model gets only its own inputs, by name
    (`own_inputs`).

    Args:
        model: the teacher or the student.
        inputs: the batch's features: a tensor, a tuple or list, a dict.
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
        return {LOGITS: model(own_inputs(model, inputs), training=training)}
    outputs = _feature_model(model, layers)(own_inputs(model, inputs), training=training)
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


def own_inputs(model, inputs):
    """The part of a batch's features `model` reads.

    Features that are not a dict (one tensor, a tuple or list of a
    multi-input model's inputs) go to the model as they are, as Keras
    passes them. From dict features, a functional model gets the inputs it
    declares, by name: the keys of a dict-input model, the `keras.Input`
    names of a list-input model, the one input of a single-input model (or
    the batch's one feature that is not a cached teacher output, whatever
    its key). Any other model gets the dict without cached teacher outputs
    (`kdplug.keys.model_inputs`).

    Args:
        model: the teacher or the student.
        inputs: the batch's features.

    Returns:
        What to call `model` with.

    Raises:
        KdplugError: a functional model's input is not in the dict.

    Examples:

    ```python
    ids = keras.Input((48,), dtype="int32", name="token_ids")
    model = keras.Model(ids, keras.layers.Dense(2)(...))
    own_inputs(model, {"token_ids": t, "teacher/logits": l})  # -> t
    ```
    """
    if not isinstance(inputs, dict):
        return inputs
    if not _is_functional(model):
        return keys.model_inputs(inputs)
    declared = model.input
    if isinstance(declared, dict):
        return {key: _feature(model, inputs, key) for key in declared}
    if isinstance(declared, (list, tuple)):
        return [_feature(model, inputs, tensor.name) for tensor in declared]
    features = keys.model_inputs(inputs)
    if declared.name not in features and len(features) == 1:
        return next(iter(features.values()))
    return _feature(model, inputs, declared.name)


def _feature(model, inputs, name):
    """`inputs[name]`, or an error naming the input and the batch's keys."""
    if name not in inputs:
        raise KdplugError(
            f"model {model.name!r} reads an input named {name!r}, and the "
            f"batch has {', '.join(sorted(inputs))}; name its keras.Input after one "
            "of them (e.g. keras.Input(shape, dtype='int32', name='token_ids'))")
    return inputs[name]


def _is_functional(model):
    """Whether `model` is a functional (or Sequential) Keras model with a
    graph of layers."""
    try:
        model.input  # noqa: B018  (raises for subclassed models)
    except (AttributeError, ValueError):
        return False
    return bool(getattr(model, "_is_graph_network", True)) and hasattr(model, "get_layer")
