"""Exceptions raised by kdplug.

Every error a user can cause derives from `KdplugError`; the CLI prints these as
one clear message (no traceback) and exits with status 2.
"""

import difflib
import math
import reprlib

__all__ = [
    "ConfigError", "DataError", "KdplugError", "PluginError", "StorageError",
    "TrainingError", "config_error", "did_you_mean",
]


class KdplugError(Exception):
    """Base class of every error kdplug reports to a user."""


class ConfigError(KdplugError):
    """A config document is invalid.

    Args:
        message: what is wrong.
        file: the config file, if any.
        field: the dotted path of the offending field, e.g. `method.temperature`.
        value: the offending value.
    """

    _MISSING = object()

    def __init__(self, message, file=None, field=None, value=_MISSING):
        self.file = file
        self.field = field
        self.value = value
        self.message = message
        where = ": ".join(str(p) for p in (file, field) if p)
        text = f"{where}: {message}" if where else message
        if value is not ConfigError._MISSING:
            text += f" (got {bounded_repr(value)})"
        super().__init__(text)


class PluginError(KdplugError):
    """A plugin failed to load or register, or two plugins clash."""


class DataError(KdplugError):
    """Input data is missing, unreadable or malformed."""


class TrainingError(KdplugError):
    """Training cannot go on (for example the loss became NaN)."""


class StorageError(KdplugError, OSError):
    """A file could not be written (a full disk, a file size limit); also
    an `OSError` (`errno`, `filename`), its text one line for the user
    (`kdplug.storage.write_failure`)."""

    def __str__(self):
        return self.strerror


def did_you_mean(name, choices):
    """Returns ` (did you mean 'x'?)` for the closest choice, or ``
    (always for a `name` that is no short string or number: a list, a
    mapping, a page of text)."""
    if not isinstance(name, (str, int, float)) or len(str(name)) > ECHO_LIMIT:
        return ""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# The most characters of a user's value an error message echoes.
ECHO_LIMIT = 80
_ECHO = reprlib.Repr()
_ECHO.maxlevel, _ECHO.maxstring, _ECHO.maxlong, _ECHO.maxother = 3, ECHO_LIMIT, 40, ECHO_LIMIT
_ECHO.maxlist = _ECHO.maxtuple = _ECHO.maxdict = _ECHO.maxset = 4


def bounded_repr(value, limit=ECHO_LIMIT):
    """`repr(value)` in at most `limit` characters, built without writing
    out the whole value: what an error message echoes of a user's value
    (a YAML anchor bomb is a few lines of text and 10^9 list items).

    Args:
        value: any value.
        limit: int. The most characters returned.

    Returns:
        str: the repr, cut with `...`.

    Examples:

    >>> bounded_repr("5e-5")
    "'5e-5'"
    >>> bounded_repr(list(range(1000)))
    '[0, 1, 2, 3, ...]'
    >>> len(bounded_repr("x" * 10_000))
    80
    """
    try:
        text = _ECHO.repr(value)
    except ValueError:  # an integer of over 4300 digits, which repr() refuses
        text = (f"<an integer of about {int(math.log10(abs(value))) + 1} digits>"
                if isinstance(value, int) else f"<a {type(value).__name__}>")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def config_error(error, file, field):
    """`error` (a `KdplugError` raised where no config file is known: a
    student kind's, a method's or a layer mapping's own check) as the
    `ConfigError` of the config `file`: naming the field the error names
    itself (a `ConfigError` with a `field`), else `field`. A `ConfigError`
    that names its file already is returned as it is.

    Args:
        error: a `KdplugError`.
        file: the config file.
        field: the dotted field to name when the error names none.

    Examples:

    ```python
    try:
        stages = method.stages(teacher, student)
    except KdplugError as e:
        raise config_error(e, config.file, "method") from None
    ```
    """
    if isinstance(error, ConfigError):
        if error.file:
            return error
        return ConfigError(error.message, file, error.field or field, error.value)
    return ConfigError(str(error), file, field)
