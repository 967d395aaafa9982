"""Loading saved models whose classes come from plugins."""

import keras

from kdplug.plugin.manager import get_plugin_manager
from kdplug.plugin.manager import import_package_modules

# kdplug's packages that define registered Keras classes.
KERAS_PACKAGES = ("kdplug.models", "kdplug.terms", "kdplug.mapping",
                  "kdplug.training", "kdplug.data")


def load_model(path, **kwargs):
    """`keras.saving.load_model(path)` with every Keras class of kdplug and
    its plugins registered first.

    Keras finds a custom class in a `.keras` file by its registered name
    (`kdplug>BertClassifier`, ...), which exists only once the module that
    defines the class was imported. kdplug's packages and its plugins import
    their Keras code on first use (so that `kdplug validate` needs no
    TensorFlow); this imports all of it (kdplug's models, terms, training
    and mapping modules, then every loaded plugin's modules, e.g. FastBERT's
    early-exit classifier), then loads the file.

    Args:
        path: a `.keras` file.
        **kwargs: passed to `keras.saving.load_model`.

    Examples:

    ```python
    import kdplug

    student = kdplug.load_model("runs/quickstart/student.keras")
    ```
    """
    for package in KERAS_PACKAGES:
        import_package_modules(package)
    get_plugin_manager().import_modules()
    return keras.saving.load_model(path, **kwargs)
