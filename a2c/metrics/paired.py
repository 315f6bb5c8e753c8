"""Share of paired predictions that agree — the core of the BECEL and CALM behavioural tests."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def same_prediction_rate(first: Sequence[Hashable], second: Sequence[Hashable]) -> float:
    """Fraction of positions where the two prediction lists agree; both must be equally long and non-empty.

    Args:
        first: one prediction per item.
        second: the paired prediction per item, in the same order.

    Returns:
        The share in [0, 1] of items whose two predictions are equal.
    """
    if len(first) != len(second):
        raise ValueError(f"paired predictions differ in length: {len(first)} vs {len(second)}")
    if not first:
        raise ValueError("no paired predictions given")
    return sum(a == b for a, b in zip(first, second, strict=True)) / len(first)
