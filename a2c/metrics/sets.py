"""What one judge says about one set of answers: Cons_sem, clustering entropy and cluster count.

The one place a matrix becomes set scores: a run's metrics stage, `a2c probe` and `a2c judge` all call
`judge_scores`, so the three cannot disagree on the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from a2c.metrics.consistency import cons_sem_of, semantic_clusters, semantic_entropy


@dataclass(frozen=True)
class JudgeScores:
    """One judge on one output set; None where undefined (fewer than two outputs)."""

    cons_sem: float | None
    entropy: float | None
    clusters: int
    cons_sem_accurate: float | None  # the same, restricted to the accurate answers (Table 1/3 of 002)


def judge_scores(matrix: np.ndarray, equivalent: np.ndarray, accurate: Sequence[bool] | None = None
                 ) -> JudgeScores:
    """`equivalent` is the judge's decision matrix (`Judge.equivalent`); `accurate` None: no references,
    so there is no consistency over accurate answers.

    Args:
        matrix: the judge's n×n agreement matrix over the set's answers.
        equivalent: its n×n equivalence decisions.
        accurate: which answers are accurate, one flag each; None when the set has no references.

    Returns:
        Cons_sem, the clusters' entropy and count, and Cons_sem over the accurate answers.
    """
    return chunk_judge_scores([(matrix, equivalent, accurate)])[0]


def chunk_judge_scores(sets: Sequence[tuple[np.ndarray, np.ndarray, Sequence[bool] | None]]
                       ) -> list[JudgeScores]:
    """`judge_scores` of many (matrix, decisions, accurate) sets, their Cons_sem computed in stacks of one
    size (`cons_sem_of`): the values of each set on its own."""
    referenced = [(matrix, np.flatnonzero(np.asarray(accurate, dtype=bool)))
                  for matrix, _, accurate in sets if accurate is not None]
    among = iter(cons_sem_of([matrix[keep][:, keep] for matrix, keep in referenced]))
    scores = []
    for (matrix, equivalent, accurate), mean in zip(sets, cons_sem_of([m for m, _, _ in sets]), strict=True):
        clusters = semantic_clusters(equivalent) if matrix.shape[0] else []
        scores.append(JudgeScores(cons_sem=mean, entropy=semantic_entropy(clusters),
                                  clusters=len(set(clusters)),
                                  cons_sem_accurate=next(among) if accurate is not None else None))
    return scores
