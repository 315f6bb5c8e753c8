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
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast

from a2c.common.errors import A2CError

T = TypeVar("T")


class UnknownNameError(A2CError, KeyError):
    """Raised for a name no registry entry has; the message suggests the closest names."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class Registry(Generic[T]):
    """A mapping of names to one kind of component (backends, judges, tasks, ...)."""

    def __init__(self, kind: str, base: type | None = None) -> None:
        self.kind = kind
        self.base = base
        self._entries: dict[str, T | str] = {}

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
        try:
            entry = self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            known = ", ".join(sorted(self._entries))
            raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} Known: {known}.") from None
        if isinstance(entry, str):
            entry = self._entries[name] = self._load(name, entry)
        return entry

    def _load(self, name: str, target: str) -> T:
        return cast(T, resolve(target, self.base, f"{self.kind} {name!r}"))

    def names(self) -> list[str]:
        return sorted(self._entries)

    def items(self, *, as_registered: bool = False) -> Iterator[tuple[str, T]]:
        """Every entry, loaded: by name, or `as_registered` in the order they were registered (where that
        order is a declaration, e.g. the columns a file writes)."""
        for name in (list(self._entries) if as_registered else self.names()):
            yield name, self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

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
