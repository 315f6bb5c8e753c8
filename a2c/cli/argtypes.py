"""argparse types shared by the commands: a bad value is a usage error naming it, never a NaN or a negative
count reaching a request."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterator
from typing import Any

from a2c.common.registry import Registry, resolve


def whole_number(minimum: int) -> Callable[[str], int]:
    """A whole number >= `minimum`."""
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}")
        return int(text)

    return parse


def finite_number(low: float, *, inclusive: bool) -> Callable[[str], float]:
    """A finite float above `low` (or at it, when `inclusive`)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value) or value < low or (value == low and not inclusive):
            bound = ">=" if inclusive else ">"
            raise argparse.ArgumentTypeError(f"must be a finite number {bound} {low:g}, got {text!r}")
        return value

    return parse


class RegistryNames:
    """The names of a registry (`"module:attr"`) as an argument's `choices`, imported the first time they are
    checked or listed: building every command's parser then loads no registry's module, so `a2c --help` or a
    config error does not pay for numpy or the model configs. Pass a `metavar` with it (argparse lists the
    choices of an argument without one when the argument is added) and `%(choices)s` in the help."""

    def __init__(self, registry_at: str) -> None:
        self.registry_at = registry_at

    def _names(self) -> list[str]:
        registry: Registry[Any] = resolve(self.registry_at, Registry, "choices")
        return registry.names()

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())
