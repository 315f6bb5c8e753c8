"""What one judge says about one set of answers: Cons_sem, clustering entropy and cluster count.

The one place a matrix becomes set scores: a run's metrics stage, `a2c probe` and `a2c judge` all call
`judge_scores`, so the three cannot disagree on the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from a2c.metrics.consistency import cons_sem, semantic_clusters, semantic_entropy


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
    so there is no consistency over accurate answers."""
    keep = np.flatnonzero(np.asarray(accurate if accurate is not None else [], dtype=bool))
    clusters = semantic_clusters(equivalent) if matrix.shape[0] else []
    return JudgeScores(
        cons_sem=cons_sem(matrix),
        entropy=semantic_entropy(clusters),
        clusters=len(set(clusters)),
        cons_sem_accurate=cons_sem(matrix[np.ix_(keep, keep)]) if accurate is not None else None,
    )
