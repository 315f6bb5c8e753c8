"""Paraphrastic consistency P_C and the variance attributable to paraphrasing (SPEC §8).

A bucket holds the correctness (0/1) of a model on several phrasings of one problem; θ_b is its accuracy.
Optional per-bucket `weights` give the corrected estimates (expectations weighted, e.g. to undo a
stratified sample); they are normalised to sum to 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Buckets = Sequence[Sequence[bool | int]]


def _bucket_accuracy(correct_by_bucket: Buckets) -> np.ndarray:
    if len(correct_by_bucket) == 0:
        raise ValueError("no buckets given")
    thetas = []
    for index, bucket in enumerate(correct_by_bucket):
        marks = np.asarray(bucket, dtype=float)
        if marks.ndim != 1 or marks.size == 0:
            raise ValueError(f"bucket {index} is empty or not a flat list of 0/1 correctness marks")
        if not np.isin(marks, (0.0, 1.0)).all():
            raise ValueError(f"bucket {index} holds values other than 0/1 correctness marks")
        thetas.append(marks.mean())
    return np.asarray(thetas)


def _weights(weights: Sequence[float] | None, n_buckets: int) -> np.ndarray:
    if weights is None:
        return np.ones(n_buckets)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n_buckets,):
        raise ValueError(f"weights must hold one value per bucket ({n_buckets}), got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    return w


def _moments(correct_by_bucket: Buckets, weights: Sequence[float] | None) -> tuple[float, float, float]:
    """(accuracy E[θ], VAP = E[θ(1−θ)], Var(θ)) under the bucket weights.

    Means divide the weighted sum once by the total weight (exact for all-equal θ), and Var(θ) is exactly
    0 when the weighted buckets share one θ, so "correctness never varies" is detected without rounding.
    """
    theta = _bucket_accuracy(correct_by_bucket)
    w = _weights(weights, theta.size)
    total = w.sum()
    accuracy = float(w @ theta / total)
    vap = float(w @ (theta * (1 - theta)) / total)
    active = theta[w > 0]
    between = 0.0 if active.min() == active.max() else float(w @ (theta - accuracy) ** 2 / total)
    return accuracy, vap, between


def paraphrastic_accuracy(correct_by_bucket: Buckets, weights: Sequence[float] | None = None) -> float:
    """E[θ]: (weighted) mean bucket accuracy — the accuracy P_C is compared against.

    Args:
        correct_by_bucket: per problem, the 0/1 correctness of each of its phrasings.
        weights: one non-negative weight per bucket (normalised here); None weighs every bucket equally.

    Returns:
        E[θ] in [0, 1].
    """
    return _moments(correct_by_bucket, weights)[0]


def paraphrastic_consistency(
    correct_by_bucket: Buckets, weights: Sequence[float] | None = None
) -> float:
    """P_C = 1 − 2·E[θ(1−θ)]: probability that two phrasings of a problem get the same correctness.

    Args:
        correct_by_bucket: per problem, the 0/1 correctness of each of its phrasings.
        weights: one non-negative weight per bucket (normalised here); None weighs every bucket equally.

    Returns:
        P_C in [0, 1].
    """
    return 1.0 - 2.0 * _moments(correct_by_bucket, weights)[1]


def variance_attributable_to_paraphrasing(
    correct_by_bucket: Buckets, weights: Sequence[float] | None = None
) -> float:
    """VAP = E[Var(R_b)] = E[θ(1−θ)]: the within-bucket part of the variance of correctness.

    Args:
        correct_by_bucket: per problem, the 0/1 correctness of each of its phrasings.
        weights: one non-negative weight per bucket (normalised here); None weighs every bucket equally.

    Returns:
        VAP in [0, 0.25].
    """
    return _moments(correct_by_bucket, weights)[1]


def proportion_of_variance_attributable_to_paraphrasing(
    correct_by_bucket: Buckets, weights: Sequence[float] | None = None
) -> float | None:
    """PVAP = VAP / Var(R) with Var(R) = VAP + Var(θ); `None` when correctness never varies.

    Args:
        correct_by_bucket: per problem, the 0/1 correctness of each of its phrasings.
        weights: one non-negative weight per bucket (normalised here); None weighs every bucket equally.

    Returns:
        PVAP in [0, 1], None when correctness has no variance.
    """
    _, vap, between = _moments(correct_by_bucket, weights)
    total = vap + between
    return None if total == 0 else vap / total


def min_paraphrastic_consistency(accuracy: float) -> float:
    """Lower bound 1 − 2A(1−A) on P_C, reached when all variance is within buckets.

    Args:
        accuracy: the accuracy A, in [0, 1].

    Returns:
        The least P_C any split of that accuracy into buckets can have.
    """
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy={accuracy} is outside [0, 1]")
    return 1.0 - 2.0 * accuracy * (1.0 - accuracy)
