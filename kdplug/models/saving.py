"""Loading saved models whose classes come from plugins."""

import keras

from kdplug.plugin.manager import get_plugin_manager


def load_model(path, **kwargs):
    """`keras.saving.load_model(path)` with every plugin loaded first.

    Keras finds a custom class in a `.keras` file by its registered name
    (`kdplug>BertClassifier`, ...), which exists only once the module that
    defines the class was imported. kdplug's generic models are registered
    when `kdplug.models` is imported; a method plugin's own models (e.g.
    FastBERT's early-exit classifier) when the plugin is loaded. This loads
    them all, then the file.

    Args:
        path: a `.keras` file.
        **kwargs: passed to `keras.saving.load_model`.

    Examples:

    ```python
    import kdplug

    student = kdplug.load_model("runs/quickstart/student.keras")
    ```
    """
    import kdplug.models  # noqa: F401  (registers the generic models)

    get_plugin_manager()
    return keras.saving.load_model(path, **kwargs)
