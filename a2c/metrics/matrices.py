"""What the per-set measures share about their input matrices: the square check, and grouping many sets'
matrices into same-shape stacks (a run has millions of small sets, and one numpy call over a stack costs
what one call over one matrix does)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def square(matrix: object, name: str) -> np.ndarray:
    """`matrix` as an array, refused unless n×n; `name` says which matrix in the message."""
    arr = np.asarray(matrix)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square n×n matrix, got shape {arr.shape}")
    return arr


def same_shape(arrays: Sequence[np.ndarray]) -> list[list[int]]:
    """Positions of the arrays grouped by shape and dtype, groups in the order first seen, positions in
    order within each: what `np.stack` can stack without converting any of them."""
    groups: dict[tuple[tuple[int, ...], str], list[int]] = {}
    for k, arr in enumerate(arrays):
        groups.setdefault((arr.shape, arr.dtype.str), []).append(k)
    return list(groups.values())
