"""Picking one answer from a candidate set without asking the model: the baselines Ask-to-Choose is
compared with. Candidates are indices into the set; agreement is a judge's n×n matrix, clusters are the
ids `semantic_clusters` returns (one per candidate). An empty set has nothing to pick (None)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _agreement(matrix: object) -> np.ndarray:
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"agreement matrix must be a square n×n matrix, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("agreement matrix contains NaN or infinite scores")
    return arr


def medoid_index(agreement: object) -> int | None:
    """The candidate with the highest mean agreement to the others (the diagonal never counts; both
    directions of a directional judge count equally); ties → the first. One candidate is its own medoid.

    Args:
        agreement: the candidates' n×n agreement matrix.

    Returns:
        The medoid's index, None for no candidates.
    """
    arr = _agreement(agreement)
    n = arr.shape[0]
    if n == 0:
        return None
    both = arr + arr.T
    totals = both.sum(axis=1) - np.diag(both)  # the mean's denominator 2(n − 1) is common to all
    return int(np.argmax(totals))  # argmax returns the first of equal maxima


def majority_cluster_index(clusters: Sequence[int], agreement: object) -> int | None:
    """The first member of the largest cluster.

    Ties in size go to the cluster whose members agree most with each other (mean off-diagonal agreement
    inside the cluster, both directions), then to the cluster whose first member comes first. Singletons
    have no pairs: between tied singletons the first wins.

    Args:
        clusters: the cluster id of each candidate (`semantic_clusters`).
        agreement: the candidates' n×n agreement matrix, breaking ties in cluster size.

    Returns:
        The index of the chosen candidate, None for no candidates.
    """
    arr = _agreement(agreement)
    ids = list(clusters)
    if len(ids) != arr.shape[0]:
        raise ValueError(f"{len(ids)} cluster ids for a {arr.shape[0]}×{arr.shape[0]} agreement matrix")
    if not ids:
        return None
    members: dict[int, list[int]] = {}
    for candidate, cluster in enumerate(ids):
        members.setdefault(cluster, []).append(candidate)  # dicts keep first-appearance order

    def cohesion(group: list[int]) -> float:
        if len(group) < 2:
            return -math.inf
        block = arr[np.ix_(group, group)]
        return float((block.sum() - np.trace(block)) / (len(group) * (len(group) - 1)))

    # max() keeps the first of equal keys, i.e. the cluster seen first
    best = max(members.values(), key=lambda group: (len(group), cohesion(group)))
    return best[0]


def expected_random_accuracy(correct: Sequence[float]) -> float | None:
    """Accuracy of picking a candidate uniformly at random: the exact mean of the per-candidate
    correctness (0/1) or score; None for no candidates.

    Args:
        correct: each candidate's correctness (0/1) or accuracy score.

    Returns:
        The mean, None for no candidates.
    """
    values = [float(v) for v in correct]
    if not values:
        return None
    if not all(math.isfinite(v) for v in values):
        raise ValueError("candidate scores must be finite")
    return math.fsum(values) / len(values)
