"""Turning plain YAML data into typed dataclasses, with precise errors."""

import copy
import dataclasses
import math
import re
import types
import typing

from kdplug.config.ranges import Items
from kdplug.config.ranges import Range
from kdplug.errors import ConfigError
from kdplug.errors import bounded_repr
from kdplug.errors import did_you_mean

# A number written as text: YAML 1.1 reads `5e-5` (no dot) as the string
# '5e-5', so a float field takes a string of this form as its number.
NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def parse(cls, data, path, file=None):
    """Validates `data` against dataclass `cls` and returns an instance.

    Unknown keys, missing required fields, wrong types, values outside a
    field's declared `Range` (`Annotated[int, Range(1, 100)]`, see
    `kdplug.config.ranges`) and values rejected by the dataclass's own
    `__post_init__` raise `ConfigError` naming the file, the dotted field
    path and the value (at most 80 characters of it), with the nearest
    valid key suggested. A `__post_init__` keeps only the rules no range
    expresses (fields that must agree) and raises
    `ConfigError(message, field=..., value=...)` naming its own field,
    which `parse` places under `path` in `file`. A float field also takes
    a number written as text (`'5e-5'`, which is how YAML 1.1 reads
    `5e-5`).

    Args:
        cls: a dataclass type whose fields carry type hints.
        data: a mapping (or None for "all defaults").
        path: dotted path of `data` inside the document (`""` for the root).
        file: the file the data came from, for messages.

    Examples:

    >>> @dataclasses.dataclass
    ... class Opt:
    ...     rate: float = 0.1
    >>> parse(Opt, {"rate": 2}, "training").rate
    2.0
    >>> parse(Opt, {"rate": "5e-5"}, "training").rate
    5e-05
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping", file, path or "<root>", data)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls, include_extras=True)
    for key in data:
        if key not in fields:
            raise ConfigError(
                f"unknown key {bounded_repr(key)}{did_you_mean(key, fields)}; valid keys: "
                + ", ".join(fields),
                file,
                join(path, key),
            )
    kwargs = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = coerce(hints[name], data[name], join(path, name), file)
        elif (field.default is dataclasses.MISSING
              and field.default_factory is dataclasses.MISSING):
            raise ConfigError("required field is missing", file, join(path, name))
    try:
        return cls(**kwargs)
    except ConfigError as e:  # a cross-field rule of `__post_init__`
        if e.file:
            raise
        field = join(path, e.field) if e.field else path or "<root>"
        raise ConfigError(e.message, file, field, e.value) from None
    except (ValueError, TypeError) as e:
        raise ConfigError(str(e), file, path or "<root>") from None


def join(path, key):
    return f"{path}.{key}" if path else str(key)


def coerce(hint, value, path, file):
    """Checks (and gently converts) one value against a type hint."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is typing.Any:
        return value
    if origin is typing.Annotated:
        value = coerce(args[0], value, path, file)
        check_range(hint, value, path, file)
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        if value is False and type(None) in args and any(
                dataclasses.is_dataclass(a) for a in args):
            return None  # an optional section switched off
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:  # Optional[X]: X's own error, at its own field
            return coerce(options[0], value, path, file)
        errors = []
        for option in args:
            if option is type(None):
                continue
            try:
                return coerce(option, value, path, file)
            except ConfigError as e:
                errors.append(e.message)
        raise ConfigError("; or ".join(errors), file, path, value)
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(
                f"must be one of {', '.join(map(repr, args))}"
                f"{did_you_mean(value, args)}",
                file, path, value,
            )
        return value
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(value, list):
            raise ConfigError("expected a list", file, path, value)
        item = args[0] if args else typing.Any
        return [coerce(item, v, f"{path}[{i}]", file) for i, v in enumerate(value)]
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise ConfigError("expected a mapping", file, path, value)
        return value
    if dataclasses.is_dataclass(hint):
        # a section written `true` means its defaults (`early_stopping: true`)
        return parse(hint, {} if value is True else value, path, file)
    if isinstance(hint, type) and hasattr(hint, "from_data"):
        return hint.from_data(value, path, file)  # a PluginRef (kdplug.config.refs)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError("expected true or false", file, path, value)
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError("expected an integer", file, path, value)
        return value
    if hint is float:
        return _float(value, path, file)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError("expected a string", file, path, value)
        return value
    return value


def check_range(hint, value, path, file=None):
    """Raises `ConfigError` if `value` lies outside a `Range` that `hint`
    declares (`Annotated[int, Range(1)]`, or `Optional` of it; None passes),
    or breaks its `Items` (`Annotated[List[str], Items(min=1)]`).
    Only the range: the value's type is the caller's."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (
        typing.Union, types.UnionType) else (hint,)
    for option in options:
        if value is None or typing.get_origin(option) is not typing.Annotated:
            continue
        for bound in typing.get_args(option)[1:]:
            problem = bound.problem(value) if isinstance(bound, (Range, Items)) else None
            if problem:
                shown = bound.shown(value) if isinstance(bound, Items) else value
                raise ConfigError(problem, file, path, shown)


def check_arguments(function, **arguments):
    """Checks a Python API's arguments against the ranges its signature
    declares (`alpha: Probability = 0.5`), as a config file's fields are:
    `ConfigError` naming the argument and its value.

    Args:
        function: the function whose annotations declare the ranges.
        **arguments: the arguments to check, by name.

    Examples:

    >>> from kdplug.config.ranges import Probability
    >>> def blend(alpha: Probability = 0.5):
    ...     check_arguments(blend, alpha=alpha)
    >>> blend(alpha=2.0)
    Traceback (most recent call last):
    ...
    kdplug.errors.ConfigError: alpha: must be in [0, 1] (got 2.0)
    """
    for name, value in arguments.items():
        # only this argument's hint: others may name types imported just
        # for type checkers (`if TYPE_CHECKING:`)
        def one():
            pass
        one.__annotations__ = {name: function.__annotations__[name]}
        hint = typing.get_type_hints(one, function.__globals__, include_extras=True)
        check_range(hint[name], value, name)


def _float(value, path, file):
    """A float field's value: a number, or a number written as text
    (`'5e-5'`); finite."""
    number = value
    if isinstance(value, str) and NUMBER_TEXT.fullmatch(value.strip()):
        number = float(value)
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ConfigError("expected a number", file, path, value)
    try:
        number = float(number)
    except OverflowError:  # an integer of more than 308 digits
        number = math.inf
    if not math.isfinite(number):
        raise ConfigError("expected a finite number", file, path, value)
    return number


def to_dict(obj):
    """A dataclass instance back to plain data (for the resolved config);
    plugin references print as they were written (`PluginRef.to_data`)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if hasattr(obj, "to_data"):
        return obj.to_data()
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_dict(v) for v in obj)
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return copy.deepcopy(obj)
