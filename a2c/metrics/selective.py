"""Selective prediction: answer the most confident questions, decline the rest, and measure what that buys.

Inputs are one confidence and one 0/1 correctness label per unit (a question's answer). Answering the k
most confident units gives coverage k/n and *selective risk* = the share of the k answered that are wrong;
the risk–coverage curve lists it for k = 1..n. Units tied in confidence are answered or declined together
by any threshold, so the order inside a tie is undefined: as `a2c.metrics.signal` does for PRR, the curve
is the expectation over tie orders (errors accumulate linearly across a tie), which keeps every figure
deterministic; without ties it is the plain curve.

- **AURC**: the mean selective risk over the n coverages (Geifman et al.); lower is better.
- **Excess AURC**: AURC minus that of the oracle ordering (every correct unit first), so 0 = ranks like
  the oracle; the part of AURC that a better score could remove.
- **ECE** with equal-mass bins: units sorted by confidence, cut into `bins` groups of (nearly) equal size,
  Σ_b (n_b / n)·|mean confidence_b − accuracy_b|. Equal mass keeps every bin populated when confidences
  crowd (isotonic maps output few distinct values).
- **Selective accuracy at coverage c**: accuracy of the ⌈c·n⌉ most confident units.
- **Coverage at risk r**: the largest coverage whose selective risk is ≤ r (0 when none is).

Intervals: a seeded percentile bootstrap over units through `a2c.metrics.bootstrap` (the helper every a2c
interval uses); `paired_difference` resamples two scores of the same units together, so what they share
cancels out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from a2c.metrics.bootstrap import percentile_interval, resample_counts
from a2c.metrics.signal import Groups, rejection_curve

BOOTSTRAP = 1000
LEVEL = 0.95
RISKS = (0.1, 0.2, 0.3)  # the report's coverage-at-risk columns
_EPS = 1e-12  # a risk computed as a sum of fractions may miss an exact bound by rounding

Values = Sequence[float] | np.ndarray
Labels = Sequence[bool] | Sequence[int] | np.ndarray


def _checked(confidence: Values, correct: Labels) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(confidence, dtype=np.float64).reshape(-1)
    y = np.asarray(correct, dtype=np.int64).reshape(-1)
    if len(c) != len(y):
        raise ValueError(f"confidence and correct differ in length: {len(c)} vs {len(y)}")
    if len(c) == 0:
        raise ValueError("no units: selective prediction needs at least one confidence")
    if not np.all(np.isfinite(c)):
        raise ValueError("confidences must be finite")
    if np.any((y != 0) & (y != 1)):
        raise ValueError("correct must be 0/1 (or booleans)")
    return c, y


def risk_coverage(confidence: Values, correct: Labels) -> tuple[np.ndarray, np.ndarray]:
    """(coverage k/n, selective risk of the k most confident) k = 1..n; the expectation over tie orders."""
    c, y = _checked(confidence, correct)
    rejected, kept_accuracy = rejection_curve(Groups.per_answer(c, y))
    return (1.0 - rejected)[::-1], (1.0 - kept_accuracy)[::-1]


def aurc(confidence: Values, correct: Labels) -> float:
    """Area under the risk–coverage curve: the mean selective risk over coverages 1/n..1."""
    return float(np.mean(risk_coverage(confidence, correct)[1]))


def oracle_aurc(correct: Labels) -> float:
    """AURC of the ordering that answers every correct unit first (the least any score can reach)."""
    y = np.asarray(correct, dtype=np.int64).reshape(-1)
    return aurc(y.astype(np.float64), y)


def excess_aurc(confidence: Values, correct: Labels) -> float:
    """AURC minus the oracle's: 0 for a score that ranks like the oracle."""
    return aurc(confidence, correct) - oracle_aurc(correct)


def expected_calibration_error(confidence: Values, correct: Labels, *, bins: int = 10) -> float:
    """ECE over `bins` equal-mass bins (fewer when there are fewer units); confidences must lie in [0, 1].
    Ties straddling a bin edge are split by input order (a stable sort), so the value is deterministic."""
    c, y = _checked(confidence, correct)
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if np.any((c < 0) | (c > 1)):
        raise ValueError("ECE needs probabilities: confidences in [0, 1] (calibrate the score first)")
    order = np.argsort(c, kind="stable")
    gaps = [abs(float(c[b].sum() - y[b].sum())) for b in np.array_split(order, min(bins, len(c)))]
    return math.fsum(gaps) / len(c)


def selective_accuracy(confidence: Values, correct: Labels, coverage: float) -> float:
    """Accuracy of the ⌈coverage·n⌉ most confident units (at least one)."""
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage must be in (0, 1], got {coverage}")
    _, risk = risk_coverage(confidence, correct)
    k = max(1, math.ceil(coverage * len(risk) - _EPS))
    return float(1.0 - risk[k - 1])


def coverage_at_risk(confidence: Values, correct: Labels, max_risk: float) -> float:
    """The largest coverage whose selective risk is at most `max_risk`; 0 when even the single most
    confident unit is riskier."""
    if not 0 <= max_risk <= 1:
        raise ValueError(f"max_risk must be in [0, 1], got {max_risk}")
    coverage, risk = risk_coverage(confidence, correct)
    within = np.flatnonzero(risk <= max_risk + _EPS)
    return float(coverage[within[-1]]) if len(within) else 0.0


# -- intervals ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Estimate:
    """A figure with its seeded percentile bootstrap interval (None below two defined replicates)."""

    value: float
    low: float | None
    high: float | None

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)


Statistic = Callable[[np.ndarray, np.ndarray], float]  # (confidence, correct) → figure


def _replicates(statistic: Statistic, confidences: Sequence[np.ndarray], correct: np.ndarray,
                replicates: int, seed: int) -> np.ndarray:
    """The statistic of every score on each bootstrap resample of the units (rows: resamples, columns:
    scores); NaN where a resample leaves it undefined."""
    n = len(correct)
    units = np.arange(n)
    out = []
    for chunk in resample_counts(n, replicates, seed):
        for counts in chunk:
            drawn = np.repeat(units, counts.astype(np.int64))
            row = []
            for c in confidences:
                try:
                    row.append(statistic(c[drawn], correct[drawn]))
                except ValueError:
                    row.append(math.nan)
            out.append(row)
    return np.asarray(out, dtype=np.float64).reshape(-1, len(confidences))


def estimate(statistic: Statistic, confidence: Values, correct: Labels, *, replicates: int = BOOTSTRAP,
             seed: int = 0, level: float = LEVEL) -> Estimate:
    """The statistic on all units, with its percentile bootstrap interval over units."""
    c, y = _checked(confidence, correct)
    values = _replicates(statistic, [c], y, replicates, seed)[:, 0]
    low_high = percentile_interval(values, level)
    return Estimate(statistic(c, y), *(low_high or (None, None)))


def paired_difference(statistic: Statistic, before: Values, after: Values, correct: Labels, *,
                      replicates: int = BOOTSTRAP, seed: int = 0, level: float = LEVEL) -> Estimate:
    """statistic(after) − statistic(before) on the same units (e.g. ECE of a calibrated vs the raw score),
    with a paired bootstrap interval: both scores see the same resamples."""
    b, y = _checked(before, correct)
    a, _ = _checked(after, correct)
    if len(a) != len(b):
        raise ValueError(f"before and after differ in length: {len(b)} vs {len(a)}")
    values = _replicates(statistic, [b, a], y, replicates, seed)
    low_high = percentile_interval(values[:, 1] - values[:, 0], level)
    return Estimate(statistic(a, y) - statistic(b, y), *(low_high or (None, None)))
