"""AUROC and PRR of a consistency score for the correctness of the chosen answer, as inspect metrics.

Each sample's consistency score (one key of the `consistency` scorer's value) is the confidence, the
TruthfulQA accuracy bit of its answer (the scorer's metadata `correct`) the target; the measures are
a2c's own (`a2c.metrics.signal`). Undefined (every answer correct, none, or one score for all): NaN.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import Metric, SampleScore, metric

from a2c.metrics.signal import Groups, prediction_rejection_ratio
from a2c.metrics.signal import auroc as signal_auroc

CORRECT = "correct"  # the Score.metadata key holding the chosen answer's accuracy (True/False/None)


def _groups(scores: list[SampleScore], uncertainty: bool) -> Groups:
    """(confidence, label) per sample that has both; an uncertainty counts negated as confidence."""
    pairs = [(float(s.score.as_float()), bool(s.score.metadata[CORRECT])) for s in scores
             if s.score.metadata and s.score.metadata.get(CORRECT) is not None]
    kept = [(-v if uncertainty else v, label) for v, label in pairs if math.isfinite(v)]
    return Groups.per_answer([v for v, _ in kept], [label for _, label in kept])


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


@metric
def auroc(uncertainty: bool = False) -> Metric:
    """AUROC of the score for predicting a correct answer; `uncertainty`: higher means less confident."""

    def compute(scores: list[SampleScore]) -> float:
        return _or_nan(signal_auroc(_groups(scores, uncertainty)))

    return compute


@metric
def prr(uncertainty: bool = False) -> Metric:
    """Prediction-rejection ratio of the score for correctness (1: ranks like an oracle, 0: like chance)."""

    def compute(scores: list[SampleScore]) -> float:
        return _or_nan(prediction_rejection_ratio(_groups(scores, uncertainty)))

    return compute
