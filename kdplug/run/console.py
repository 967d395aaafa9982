"""What a run prints: kdplug's log messages, progress, and no start-up noise.

kdplug's own messages go through Python's `logging` (loggers under
`kdplug`); the CLI shows them as `kdplug: <message>` lines on stderr.
TensorFlow, absl and CUDA print start-up noise on the file descriptor itself
("All log messages before absl::InitializeLog()...", "Could not find cuda
drivers", CPU feature notes); `import_tensorflow_quietly()` imports
TensorFlow with that descriptor pointed at /dev/null and raises TensorFlow's
C++ log threshold, unless `--verbose` asks for everything.

Progress: Keras progress bars redraw a line with carriage returns, which
fills a log file with every frame (174 KB for the quickstart). So a bar is
shown only on a terminal; otherwise `ProgressLine` logs one line every
`interval` seconds and at the end of every epoch (`keras_verbosity` and
`progress_lines` in `kdplug.training.callbacks.progress_line`, which the
teacher's fine-tuning uses too).

Examples:

```python
configure_logging(verbose=False)      # the CLI does this
import_tensorflow_quietly()           # before anything imports TensorFlow
```
"""

import contextlib
import logging
import os
import sys
import time

from kdplug import _lazy
from kdplug._lazy import stderr_to_devnull

LOGGER = "kdplug"


def configure_logging(verbose=False, stream=None):
    """Shows kdplug's messages as `kdplug: <message>` on `stream` (stderr):
    INFO and above, DEBUG too with `verbose`. Idempotent."""
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    for handler in list(logger.handlers):
        if getattr(handler, "_kdplug", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("kdplug: %(message)s"))
    handler._kdplug = True
    logger.addHandler(handler)
    return logger


@contextlib.contextmanager
def warnings_as_messages(packages=("kdplug", "kdplug_plugins")):
    """Within the block, the warnings raised from `packages`' code
    (`warnings.warn`: skipped bad rows, rows in no split) print as
    `kdplug: warning: <message>` lines through kdplug's logger, without
    Python's source-file prefix; other warnings print as before. The CLI
    runs each command in it; a library user gets Python warnings.

    Examples:

    ```python
    with warnings_as_messages():
        read_splits(config.data)  # kdplug: warning: data.tsv: rows in none ...
    ```
    """
    import warnings

    show = warnings.showwarning
    folders = tuple(filter(None, map(_package_folder, packages)))

    def as_message(message, category, filename, lineno, file=None, line=None):
        if category is UserWarning and os.path.realpath(filename).startswith(folders):
            logging.getLogger(LOGGER).warning("warning: %s", message)
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = as_message
    try:
        yield
    finally:
        warnings.showwarning = show


def _package_folder(name):
    """The folder of package `name` (with a trailing separator), found
    without importing it; None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.realpath(list(spec.submodule_search_locations)[0]) + os.sep


def import_tensorflow_quietly(verbose=False):
    """Imports TensorFlow (and Keras) without the C++/absl start-up noise.

    With `verbose`, or when TensorFlow is already imported, this only
    imports (with `verbose`, at TensorFlow's own log level unless the user
    set one). Otherwise TensorFlow's C++ log threshold is raised to errors
    only (`TF_CPP_MIN_LOG_LEVEL=3`, unless the user set it) and file
    descriptor 2 points at /dev/null while the import runs, which is when
    absl and the CUDA stubs print. Python exceptions are not affected.
    """
    if verbose and _lazy.tf_log_level_is_kdplugs and "tensorflow" not in sys.modules:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # everything, as `-v` promises
    if verbose or "tensorflow" in sys.modules:
        import tensorflow  # noqa: F401
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2":
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # kdplug 0.1's (and the tests') level
    with stderr_to_devnull():
        import keras  # noqa: F401
        import tensorflow  # noqa: F401
    logging.getLogger("absl").setLevel(logging.ERROR)


def progress_logger(log, label, interval=60.0, clock=time.monotonic):
    """`fn(done, total)` that logs `<label>: <done> of <total> examples (<%>),
    <s> s` at most once every `interval` seconds, and always at the end:
    progress for long loops outside Keras' `fit` (the C-MLM teacher's soft
    labels run for minutes). `clock` is for tests.

    Examples:

    ```python
    progress = progress_logger(log, "soft labels (train)")
    for start in range(0, n, 64):
        ...
        progress(min(start + 64, n), n)
    ```
    """
    started = clock()
    last = [started]

    def progress(done, total):
        now = clock()
        if done < total and now - last[0] < interval:
            return
        last[0] = now
        log.info("%s: %s of %s examples (%.0f%%), %.0f s", label, f"{done:,}",
                 f"{total:,}", 100.0 * done / max(total, 1), now - started)

    return progress
