"""A name -> class registry for one kind of plugin object."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from typing import Generic
from typing import Optional
from typing import TypeVar

from kdplug.errors import PluginError
from kdplug.errors import bounded_repr
from kdplug.errors import did_you_mean

if TYPE_CHECKING:
    from kdplug.plugin.manager import PluginRecord

T = TypeVar("T")  # the kind: registered classes are `type[T]` (`Method`, ...)


class Registry(Generic[T]):
    """Maps names (as configs spell them) to registered classes.

    Each entry remembers the plugin that registered it, so that a clash names
    both sources and `kdplug plugins` can say where a name comes from.

    Args:
        kind: what is registered, e.g. `"method"`; used in messages.

    Examples:

    ```python
    methods = Registry("method")
    methods.add(MyMethod, source="my-package")
    methods.get("my-method")  # -> MyMethod
    ```
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, tuple[type[T], str]] = {}
        self._conflicts: dict[str, list[str]] = {}
        # (record, names it would have registered)
        self._failures: list[tuple[PluginRecord, tuple[str, ...]]] = []

    def add(self, cls: type[T], source: str) -> None:
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(
                f"{self.kind} class {cls!r} from {source!r} has no `name` "
                "string attribute"
            )
        if name in self._entries:
            first = self._entries[name][1]
            self._conflicts.setdefault(name, [first]).append(source)
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by {first!r} and "
                f"by {source!r}"
            )
        self._entries[name] = (cls, source)

    def get(self, name: str) -> type[T]:
        if name in self._conflicts:
            sources = " and ".join(repr(s) for s in self._conflicts[name])
            raise PluginError(
                f"{self.kind} {name!r} is ambiguous: registered by {sources}; "
                "uninstall one of them"
            )
        if name not in self._entries:
            known = ", ".join(sorted(self._entries)) or "none"
            raise KeyError(
                f"unknown {self.kind} {bounded_repr(name)}{did_you_mean(name, self._entries)}"
                f"; known: {known}{self._failure_note(name)}"
            )
        return self._entries[name][0]

    def note_failure(self, record: PluginRecord,
                     names: Iterable[Optional[str]] = ()) -> None:
        """Remembers a plugin that failed to load (a `PluginRecord`), and the
        names of this kind it would have registered, if known, so that a
        lookup of a missing name can say why it may be missing."""
        self._failures.append((record, tuple(n for n in names if n)))

    def _failure_note(self, name: str) -> str:
        for record, names in self._failures:
            if name in names:
                return (f"; {self.kind} {name!r} comes from plugin {record.name!r} "
                        f"({record.source}), which failed to load: {record.error}")
        unknown = [record for record, names in self._failures if not names]
        if not unknown:
            return ""
        failed = "; ".join(f"plugin {r.name!r} ({r.source}) failed to load: {r.error}"
                           for r in unknown)
        return f"; note: {failed}, and may provide it"

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def source(self, name: str) -> str:
        return self._entries[name][1]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)
