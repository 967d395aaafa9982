"""Every hook a kdplug plugin can implement.

Hooks only *discover* behaviour: each one hands a `register` callable to the
plugin, which registers classes. The classes hold the behaviour.

A plugin is a module (or object) exposing functions decorated with
`kdplug.hookimpl` and advertised under the `kdplug.plugins` entry-point group:

```ini
[options.entry_points]
kdplug.plugins =
    my_method = my_package.my_plugin
```

Examples:

```python
import kdplug

@kdplug.hookimpl
def kdplug_register_methods(register):
    register(MyMethod)
```
"""

import pluggy

PROJECT_NAME = "kdplug"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def kdplug_register_methods(register):
    """Register distillation methods.

    Args:
        register: call `register(method_cls)` for each `kdplug.Method`
            subclass. `method_cls.name` is the name configs use
            (`method.name`); it must be unique across all plugins.
    """


@hookspec
def kdplug_register_students(register):
    """Register student architectures.

    Args:
        register: call `register(student_cls)` for each `kdplug.StudentKind`
            subclass. `student_cls.name` is the name configs use
            (`student.kind`).
    """


@hookspec
def kdplug_register_augmenters(register):
    """Register data augmenters that grow a transfer set.

    Args:
        register: call `register(augmenter_cls)` for each augmenter class;
            `augmenter_cls.name` is the name configs use
            (`augment[].name`).
    """


@hookspec
def kdplug_register_mappings(register):
    """Register layer-mapping strategies (teacher layer -> student layer).

    Args:
        register: call `register(mapping_cls)` for each mapping class;
            `mapping_cls.name` is the name configs use.
    """


@hookspec
def kdplug_callbacks(config):
    """Return extra Keras callbacks for a run.

    Args:
        config: the validated `kdplug.config.ExperimentConfig` of the run.

    Returns:
        A list of `keras.callbacks.Callback` instances (or None).
    """
