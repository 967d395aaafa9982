"""A model trained in mixed precision as the float32 model that is measured
and exported."""

import keras

__all__ = ["float32_copy", "policy_copy", "policy_name", "with_dtype_policy"]


def with_dtype_policy(config, dtype):
    """A Keras config with every layer's dtype policy replaced by `dtype`.

    Examples:

    >>> with_dtype_policy({"dtype": {"class_name": "DTypePolicy",
    ...                              "config": {"name": "mixed_bfloat16"}}}, "float32")
    {'dtype': {'class_name': 'DTypePolicy', 'config': {'name': 'float32'}}}
    """
    if isinstance(config, dict):
        if config.get("class_name") in ("DTypePolicy", "FloatDTypePolicy") and \
                isinstance(config.get("config"), dict) and "name" in config["config"]:
            return {**config, "config": {**config["config"], "name": dtype}}
        return {k: with_dtype_policy(v, dtype) for k, v in config.items()}
    if isinstance(config, list):
        return [with_dtype_policy(v, dtype) for v in config]
    return config


def policy_name(model):
    """The name of `model`'s dtype policy (`"float32"` without one).

    Examples:

    >>> policy_name(object())
    'float32'
    """
    return getattr(getattr(model, "dtype_policy", None), "name", "float32")


def policy_copy(model, dtype):
    """A copy of `model` built from its config with every dtype policy
    `dtype` (layers its constructor makes without a policy too) and its
    weights.

    Args:
        model: a Keras model with `get_config` / `from_config`.
        dtype: a Keras dtype policy name (`"float32"`, `"bfloat16"`, ...).

    Examples:

    ```python
    half = policy_copy(teacher, "bfloat16")   # bfloat16 variables and compute
    ```
    """
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype)  # layers built without a policy
    try:
        copy = type(model).from_config(with_dtype_policy(model.get_config(), dtype))
    finally:
        keras.config.set_dtype_policy(previous)
    copy.set_weights(model.get_weights())
    return copy


def float32_copy(model):
    """`model` computing in float32: the model itself when it does, else
    `policy_copy(model, "float32")`.

    A model trained under `training.mixed_precision` keeps float32 weights
    but computes in bfloat16 / float16, which TFLite's converters do not
    take and which is slower at batch 1 on most CPUs; a run measures and
    exports this copy instead (the weights are the same).

    Args:
        model: a Keras model with `get_config` / `from_config`.

    Examples:

    ```python
    with precision_policy("mixed_bfloat16"):
        student = truncated_bert(teacher, [0, 2, 4], num_classes=2)
    exported = float32_copy(student)   # exported.dtype_policy.name == "float32"
    ```
    """
    if policy_name(model) == "float32":
        return model
    return policy_copy(model, "float32")
