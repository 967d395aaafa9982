"""References to registered plugin classes inside a plugin's config.

A method's `Config` may name another registered class with options, e.g. the
layer mapping it uses. Such a field is annotated with a `PluginRef` subclass
(`MappingRef`) and written in YAML either as a name or as a mapping with a
`name` and that class's options:

```yaml
method:
  name: tinybert
  mapping: uniform                                  # a name
# or
  mapping: {name: custom, pairs: [[2, 1], [6, 3]]}  # a name and its options
```

`kdplug.config` validates it when the config loads (so `kdplug validate`
catches it): the name is looked up in the plugin registry of the reference's
kind and the options are parsed against that class's `Config` (its
`__post_init__` checks what needs no model). A resolved config prints the
reference back as written: a bare name as a name, a mapping with every
option filled in.

Examples:

```python
@dataclasses.dataclass
class Config:
    mapping: MappingRef = "uniform"

ref = MappingRef.of(config.mapping)   # resolved (the process-wide plugins)
ref.build().layer_pairs(6, 3)         # a configured UniformMapping
```
"""

import dataclasses

from kdplug.config.schema import parse
from kdplug.errors import ConfigError


class PluginRef:
    """A registered class named in a config, with its typed options.

    Subclasses set `kind`, the plugin registry it refers to (`"mapping"`).

    Args:
        name: the registered name.
        options: the options as written (a dict, parsed on `resolve()`), or
            the class's `Config` instance once resolved.
        as_name: the reference was written as a bare name (it prints back so).
    """

    kind = ""

    def __init__(self, name, options=None, as_name=True):
        self.name = name
        self.options = {} if options is None else options
        self.as_name = as_name
        self.cls = None
        self.path = None  # the dotted field it was resolved at (`method.mapping`)

    @classmethod
    def from_data(cls, value, path, file=None):
        """A reference from YAML data: a name or `{name: ..., **options}`."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value:
            return cls(value)
        if isinstance(value, dict):
            if "name" not in value:
                raise ConfigError("required field is missing", file, f"{path}.name")
            name = value["name"]
            if not isinstance(name, str) or not name:
                raise ConfigError("expected a string", file, f"{path}.name", name)
            return cls(name, {k: v for k, v in value.items() if k != "name"},
                       as_name=False)
        raise ConfigError(
            f"expected a {cls.kind} name or a mapping with a `name` and its "
            "options", file, path, value)

    def resolve(self, registry, path, file=None):
        """Looks the name up in `registry` and parses the options against
        the class's `Config`; returns self."""
        if self.cls is not None:
            return self
        self.path = path
        try:
            self.cls = registry.get(self.name)
        except KeyError as e:
            where = path if self.as_name else f"{path}.name"
            raise ConfigError(e.args[0], file, where) from None
        self.options = parse(self.cls.Config, self.options, path, file)
        return self

    @classmethod
    def of(cls, value, plugin_manager=None, path=None):
        """A resolved reference from a name, a dict or a reference (the
        process-wide plugin manager's registry unless given): what a
        plugin's code calls on its config field, which holds a resolved
        reference when the config came through `kdplug.config`, and may hold
        a plain name when the `Config` was built in Python."""
        ref = cls.from_data(value, path or cls.kind)
        if ref.cls is None:
            if plugin_manager is None:
                from kdplug.plugin.manager import get_plugin_manager

                plugin_manager = get_plugin_manager()
            ref.resolve(plugin_manager.registries[cls.kind], path or cls.kind)
        return ref

    def build(self):
        """The configured instance of the referenced class; its
        `config_field` is the field that configured it (`method.mapping`),
        for its errors to name."""
        if self.cls is None:
            raise ValueError(f"{self.kind} reference {self.name!r} is not resolved")
        built = self.cls(self.options)
        built.config_field = self.path
        return built

    def to_data(self):
        """The reference as a resolved config prints it."""
        if self.as_name:
            return self.name
        options = (dataclasses.asdict(self.options)
                   if dataclasses.is_dataclass(self.options) else dict(self.options))
        return {"name": self.name, **options}

    def __eq__(self, other):
        if isinstance(other, PluginRef):
            return (self.kind, self.to_data()) == (other.kind, other.to_data())
        return NotImplemented

    def __repr__(self):
        return f"{type(self).__name__}({self.to_data()!r})"


class MappingRef(PluginRef):
    """A layer mapping (`kdplug_register_mappings`): `uniform`, `skip`,
    `last`, `custom` or a plugin's."""

    kind = "mapping"


def resolve_refs(config, plugin_manager, path, file=None):
    """Resolves every `PluginRef` field of a parsed plugin `Config` (field
    defaults written as names included), in place."""
    import typing

    if not dataclasses.is_dataclass(config):
        return config
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        hint = hints.get(field.name)
        if isinstance(hint, type) and issubclass(hint, PluginRef):
            where = f"{path}.{field.name}"
            ref = hint.from_data(getattr(config, field.name), where, file)
            registry = plugin_manager.registries[hint.kind]
            setattr(config, field.name, ref.resolve(registry, where, file))
    return config
