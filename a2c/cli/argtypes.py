"""argparse types shared by the commands: a bad value is a usage error naming it, never a NaN or a negative
count reaching a request."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


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
