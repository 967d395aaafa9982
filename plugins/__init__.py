"""kdplug's built-in plugins (installed as `kdplug_plugins`).

Each sub-package is registered through the `kdplug.plugins` entry-point group
exactly like a third-party plugin (see setup.cfg).
"""
