"""Name → component registries, so a YAML name maps to code without if/else chains.

An entry is either the component itself (`register`) or where to find it, `"module:attr"`
(`register_lazy`): the module is imported the first time the name is looked up, and what it holds is checked
against the registry's `base` (a subclass of it, or an instance). Lazy entries keep `import a2c` light (no
torch for a config check) and replace hand-kept lists of side-effect imports: the names are known before
any module is loaded.

Every lazy reference in a2c is such a `"module:attr"` string, resolved by `resolve`: registry entries, a
component spec's registry (`ComponentSpec.registry_at`), the CLI's choices (`RegistryNames`) and a
package's names imported on first use (`lazy_attributes`, a PEP 562 `__getattr__`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from a2c.common.errors import A2CError, OneLineWarning

__all__ = ["Plugin", "PluginError", "PluginWarning", "Registry", "UnknownNameError", "lazy_attributes",
           "plugin_entry_points", "resolve"]

T = TypeVar("T")


class UnknownNameError(A2CError, KeyError):
    """Raised for a name no registry entry has; the message suggests the closest names."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class PluginError(A2CError, ValueError):
    """An outside plug-in that cannot be used: its module fails to import, it holds the wrong kind of
    object, or two distributions declare the same name. A ValueError, so a config naming it reports the
    key and the line."""


class PluginWarning(OneLineWarning):
    """A plug-in that is not used because a built-in component has its name."""


@dataclass(frozen=True)
class Plugin:
    """One entry point of an installed distribution: `name = value` in `group`."""

    name: str
    value: str  # "module:attr"
    group: str
    distribution: str

    def __str__(self) -> str:
        return f"entry point `{self.name} = {self.value}` of {self.distribution!r} (group {self.group})"


def plugin_entry_points(group: str) -> list[Plugin]:
    """The entry points installed distributions declare in `group`, from their metadata (nothing of theirs
    is imported).

    Args:
        group: the entry-point group, e.g. `a2c.judges`.

    Returns:
        One `Plugin` per entry point, in the order the metadata lists them.
    """
    return [Plugin(ep.name, ep.value, group, ep.dist.name if ep.dist is not None else "unnamed")
            for ep in importlib.metadata.entry_points(group=group)]


class Registry(Generic[T]):
    """A mapping of names to one kind of component (backends, judges, tasks, ...); with a `group`, the
    entry points of that group are names too (the module docstring says how)."""

    def __init__(self, kind: str, base: type | None = None, group: str | None = None) -> None:
        self.kind = kind
        self.base = base
        self.group = group
        self._entries: dict[str, T | str] = {}
        self._plugin_table: dict[str, list[Plugin]] | None = None  # read on first need
        self._plugins_loaded: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(entry: T) -> T:
            self._add(name, entry)
            return entry

        return add

    def register_lazy(self, name: str, target: str) -> None:
        """`target` is `"package.module:attribute"`, imported on first lookup."""
        if ":" not in target:
            raise ValueError(f"{self.kind} {name!r}: lazy target must be 'module:attr', got {target!r}")
        self._add(name, target)

    def _add(self, name: str, entry: T | str) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry

    def get(self, name: str) -> T:
        """The component registered (or installed as a plug-in) under `name`, its module imported now.

        Raises:
            UnknownNameError: no such name; the message lists the closest and all known names.
            PluginError: the name is a plug-in's and that plug-in cannot be loaded.
        """
        if name not in self._entries:
            return self._plugin(name)
        entry = self._entries[name]
        if isinstance(entry, str):
            entry = self._entries[name] = self._load(name, entry)
        return entry

    def _load(self, name: str, target: str) -> T:
        return cast(T, resolve(target, self.base, f"{self.kind} {name!r}"))

    def _plugins(self) -> dict[str, list[Plugin]]:
        """The group's entry points by name, read from the metadata once; those a built-in name shadows
        are left out, each with a `PluginWarning`."""
        if self._plugin_table is None:
            table: dict[str, list[Plugin]] = {}
            for plugin in plugin_entry_points(self.group) if self.group else []:
                if plugin.name in self._entries:
                    warnings.warn(f"{self.kind} {plugin.name!r} is built in: the {plugin} is not used",
                                  PluginWarning, stacklevel=3)
                else:
                    table.setdefault(plugin.name, []).append(plugin)
            self._plugin_table = table
        return self._plugin_table

    def _plugin(self, name: str) -> T:
        if name in self._plugins_loaded:
            return self._plugins_loaded[name]
        found = self._plugins().get(name)
        if not found:
            raise UnknownNameError(self._unknown(name))
        if len(found) > 1:
            raise PluginError(f"{self.kind} {name!r} is declared by more than one plug-in: "
                              f"{'; '.join(map(str, found))}; uninstall all but one")
        plugin = found[0]
        try:
            loaded = self._load(name, plugin.value)
        except Exception as exc:  # anything its import raises: the plug-in's, not a2c's
            reason = next(iter(str(exc).strip().splitlines()), "")
            raise PluginError(f"{self.kind} {name!r} comes from the {plugin}, which cannot be loaded: "
                              f"{type(exc).__name__}{': ' + reason if reason else ''}") from exc
        self._plugins_loaded[name] = loaded
        return loaded

    def _unknown(self, name: str) -> str:
        known = self.names()
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        origin = f" Plug-ins add names through the entry-point group {self.group}." if self.group else ""
        return f"unknown {self.kind} {name!r}.{hint} Known: {', '.join(known)}.{origin}"

    def plugin_of(self, name: str) -> Plugin | None:
        """The entry point a plug-in name comes from; None for a built-in name (or an unknown one)."""
        if name in self._entries:
            return None
        found = self._plugins().get(name)
        return found[0] if found else None

    def names(self, *, plugins: bool = True) -> list[str]:
        """Every name, sorted: built in and (unless `plugins` is false) installed, none of them imported."""
        return sorted({*self._entries, *(self._plugins() if plugins else ())})

    def items(self, *, as_registered: bool = False, plugins: bool = True) -> Iterator[tuple[str, T]]:
        """Every entry, loaded: by name, or `as_registered` in the order they were registered (where that
        order is a declaration, e.g. the columns a file writes; the plug-ins then follow by name).
        `plugins=False` keeps to the built-in entries (no plug-in is imported)."""
        if as_registered:
            names = [*self._entries, *(sorted(set(self._plugins()) - set(self._entries)) if plugins else [])]
        else:
            names = self.names(plugins=plugins)
        for name in names:
            yield name, self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries or (isinstance(name, str) and name in self._plugins())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def resolve(target: str, base: type | None = None, what: str = "") -> Any:
    """`"package.module:attr"` (or `module:Class.attr`) → that object, its module imported now; checked
    against `base` (a subclass of it, or an instance) where one is given, the error naming `what` the target
    was for."""
    module, colon, attr = target.partition(":")
    if not colon or not module or not attr:
        raise ValueError(f"{what or 'lazy target'}: must be 'module:attr', got {target!r}")
    loaded: Any = importlib.import_module(module)
    for part in attr.split("."):
        loaded = getattr(loaded, part)
    if base is not None:
        ok = issubclass(loaded, base) if isinstance(loaded, type) else isinstance(loaded, base)
        if not ok:
            raise TypeError(f"{what or 'lazy target'}: {target} is not a {base.__name__}")
    return loaded


def lazy_attributes(package: str, homes: Mapping[str, Iterable[str]], *, moved_to: str | None = None,
                    deprecated: Callable[[str], str | None] | None = None) -> Callable[[str], Any]:
    """A package's module `__getattr__` (PEP 562) that imports a public name from its home module on first
    use, so `import a2c.metrics` loads no numpy until a metric is asked for. `homes` maps each module to the
    names it defines; `moved_to` takes every other name (a moved module's alias); `deprecated(name)` gives the
    DeprecationWarning of an alias (None: not deprecated). A name that is not deprecated is then stored in
    the package, so later lookups skip this function."""
    table = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        home = table.get(name, moved_to)
        if home is None or name.startswith("__"):  # `__path__` and the like: the import system probing
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = resolve(f"{home}:{name}")
        message = deprecated(name) if deprecated is not None else None
        if message:
            warnings.warn(message, DeprecationWarning, stacklevel=2)
        else:
            setattr(sys.modules[package], name, value)
        return value

    return __getattr__
