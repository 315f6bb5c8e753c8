"""Consistency of one output set: Cons_lex, Cons_sem, semantic clusters and their entropy (SPEC §3).

Sets with fewer than two outputs have no pairs, so every set metric returns `None` for them; dataset-level
code aggregates with `mean_defined`, which skips and counts those `None`s, so no NaN reaches a report.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from a2c.common.text import normalize
from a2c.metrics.matrices import same_shape, square
from a2c.metrics.set_metrics import SetMetric


def cons_lex(outputs: Sequence[str]) -> float | None:
    """Share of ordered pairs (i ≠ j) whose normalised texts are equal; `None` below two outputs.

    Args:
        outputs: the answers of one set (one question's paraphrases or samples).

    Returns:
        Cons_lex in [0, 1], None for fewer than two outputs.
    """
    n = len(outputs)
    if n < 2:
        return None
    # counting equal pairs per distinct text is O(n) instead of the O(n²) pair loop
    same_pairs = sum(k * (k - 1) for k in Counter(normalize(o) for o in outputs).values())
    return same_pairs / (n * (n - 1))


def cons_sem(matrix: object) -> float | None:
    """Mean off-diagonal entry of an n×n agreement matrix (both directions count); `None` below n = 2.

    Args:
        matrix: an n×n agreement matrix (anything numpy reads as one) from a pairwise judge.

    Returns:
        Cons_sem, None for n < 2.
    """
    return cons_sem_of([matrix])[0]


def cons_sem_of(matrices: Sequence[object]) -> list[float | None]:
    """`cons_sem` of each matrix, the same-size ones stacked into one pass (a run has millions of small
    sets, and a numpy call costs more than the sum it makes). Each matrix is summed as its own flat row
    and its diagonal on its own, so the values are those of one matrix at a time, to the bit."""
    values: list[float | None] = [None] * len(matrices)
    arrays = [square(matrix, "agreement matrix") for matrix in matrices]
    for members in same_shape(arrays):
        n = arrays[members[0]].shape[0]
        if n < 2:
            continue
        stack = np.stack([arrays[k] for k in members]).astype(float)
        if not np.isfinite(stack).all():
            raise ValueError("agreement matrix contains NaN or infinite scores")
        totals = stack.reshape(len(members), n * n).sum(axis=1)
        means = (totals - np.trace(stack, axis1=1, axis2=2)) / (n * (n - 1))
        for k, mean in zip(members, means.tolist(), strict=True):
            values[k] = mean
    return values


def semantic_clusters(equivalent: object) -> list[int]:
    """Cluster id per output; ids count up in order of first appearance.

    Two outputs are equivalent only when the decision holds in both directions. Each output is compared
    with the *representative* (first member) of every existing cluster in order and joins the first match
    — then stops, so it lands in exactly one cluster (the peer bug kept looping and joined several). We do
    not take connected components: with a lenient judge, chains like "yes" ~ "probably yes" ~ "probably
    no" would merge answers that are not equivalent to each other.

    Args:
        equivalent: an n×n matrix of equivalence decisions (truthy: row i is equivalent to column j).

    Returns:
        The cluster id of each output, counted from 0.
    """
    arr = square(equivalent, "equivalence matrix").astype(bool)
    both = arr & arr.T
    representatives: list[int] = []
    ids: list[int] = []
    for i in range(arr.shape[0]):
        for cluster, rep in enumerate(representatives):
            if both[i, rep]:
                ids.append(cluster)
                break
        else:
            ids.append(len(representatives))
            representatives.append(i)
    return ids


def semantic_entropy(cluster_ids: Sequence[int]) -> float | None:
    """Entropy in bits of the cluster sizes: 0 = one meaning, log2(n) = all different; `None` below n = 2.

    Args:
        cluster_ids: the cluster id of each output (`semantic_clusters`).

    Returns:
        The entropy in bits, None for fewer than two outputs.
    """
    n = len(cluster_ids)
    if n < 2:
        return None
    entropy = -sum((k / n) * math.log2(k / n) for k in Counter(cluster_ids).values())
    return entropy + 0.0  # turn -0.0 into 0.0 for a single cluster


# how the tables read these metrics (`a2c.metrics.set_metrics`); computed by `judge_scores` and `cons_lex`
CONS_LEX = SetMetric("Cons_lex", higher_is_better=True, stored="cons_lex")
CONS_SEM = SetMetric("Cons_sem", higher_is_better=True, per="judge", stored="cons_sem")
CONS_SEM_ACCURATE = SetMetric("Cons_sem (accurate answers)", higher_is_better=True, per="judge",
                              stored="cons_sem_accurate", signal=False)
ENTROPY = SetMetric("Entropy", higher_is_better=False, per="judge", stored="entropy")
CLUSTERS = SetMetric("Clusters", higher_is_better=False, per="judge", stored="clusters", signal=False)
