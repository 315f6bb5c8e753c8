"""Alignment with human judgements (SPEC §10): Spearman ρ and Fleiss' κ."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def spearman_rho(metric_values: Sequence[float], human_values: Sequence[float]) -> float | None:
    """Spearman's ρ between a metric and human labels per item; `None` when undefined (n < 2, constant).

    Args:
        metric_values: the metric's value per item.
        human_values: the human judgement per item, in the same order.

    Returns:
        ρ in [-1, 1], None for fewer than two items or a constant sequence.
    """
    from scipy import stats  # scipy.stats takes seconds of CPU to import: only when a ρ is computed

    x = np.asarray(metric_values, dtype=float)
    y = np.asarray(human_values, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"need two flat sequences of equal length, got shapes {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("values must be finite (use None-skipping aggregation before correlating)")
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(stats.spearmanr(x, y).statistic)


def rating_counts(ratings: Sequence[Sequence[Hashable]]) -> tuple[np.ndarray, list[Hashable]]:
    """Turn per-item annotator labels into the item × category count table Fleiss' κ needs.

    Categories are ordered by first appearance; returns (counts, categories).

    Args:
        ratings: for each item, the labels its annotators gave.

    Returns:
        The items × categories count table and the categories in column order.
    """
    categories: dict[Hashable, int] = {}
    for labels in ratings:
        for label in labels:
            categories.setdefault(label, len(categories))
    counts = np.zeros((len(ratings), len(categories)), dtype=int)
    for row, labels in enumerate(ratings):
        for label in labels:
            counts[row, categories[label]] += 1
    return counts, list(categories)


def fleiss_kappa(counts: Sequence[Sequence[int]] | np.ndarray) -> float | None:
    """Fleiss' κ from an items × categories table of rater counts (same number of raters per item).

    `None` when chance agreement is already perfect (every rating in one category), where κ is 0/0.

    Args:
        counts: items × categories, how many raters put each item in each category.

    Returns:
        κ (1 is perfect agreement, 0 chance level), None when it is 0/0.
    """
    table = np.asarray(counts)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError(f"counts must be a non-empty items × categories table, got shape {table.shape}")
    if not np.issubdtype(table.dtype, np.integer) or (table < 0).any():
        raise ValueError("counts must be non-negative integers")
    raters = table.sum(axis=1)
    if (raters != raters[0]).any():
        raise ValueError("every item must be rated by the same number of raters")
    n = int(raters[0])
    if n < 2:
        raise ValueError(f"Fleiss' kappa needs at least 2 raters per item, got {n}")
    per_item = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    observed = per_item.mean()
    shares = table.sum(axis=0) / (table.shape[0] * n)
    expected = float((shares * shares).sum())
    if expected == 1.0:
        return None
    return float((observed - expected) / (1.0 - expected))
