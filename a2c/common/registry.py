"""Name → component registries, so a YAML name maps to code without if/else chains.

An entry is either the component itself (`register`) or where to find it, `"module:attr"`
(`register_lazy`): the module is imported the first time the name is looked up, and what it holds is checked
against the registry's `base` (a subclass of it, or an instance). Lazy entries keep `import a2c` light (no
torch for a config check) and replace hand-kept lists of side-effect imports: the names are known before
any module is loaded.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
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
        module, _, attr = target.partition(":")
        loaded: Any = getattr(importlib.import_module(module), attr)
        if self.base is not None:
            ok = issubclass(loaded, self.base) if isinstance(loaded, type) else isinstance(loaded, self.base)
            if not ok:
                raise TypeError(f"{self.kind} {name!r}: {target} is not a {self.base.__name__}")
        return cast(T, loaded)

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
