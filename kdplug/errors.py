"""Exceptions raised by kdplug.

Every error a user can cause derives from `KdplugError`; the CLI prints these as
one clear message (no traceback) and exits with status 2.
"""

import difflib


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
            text += f" (got {value!r})"
        super().__init__(text)


class PluginError(KdplugError):
    """A plugin failed to load or register, or two plugins clash."""


class DataError(KdplugError):
    """Input data is missing, unreadable or malformed."""


class TrainingError(KdplugError):
    """Training cannot go on (for example the loss became NaN)."""


def did_you_mean(name, choices):
    """Returns ` (did you mean 'x'?)` for the closest choice, or ``."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
