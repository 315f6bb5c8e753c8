"""A decline threshold with a finite-sample risk guarantee: Learn-then-Test with fixed-sequence testing.

Answering the units whose confidence is ≥ λ, the selective risk R(λ) is the probability that an answered
unit is wrong. For each λ of a sequence fixed *without* the tested units' labels (`threshold_grid` takes
it from the units the map was fitted on), test H_λ: R(λ) > max_risk with the
exact binomial p-value of the answered units' errors — given which units are answered, their errors are
independent draws with probability R(λ), so P(Bin(n_λ, max_risk) ≤ errors) is valid (a 0/1 loss needs no
Hoeffding–Bentkus bound). Testing from the strictest λ down and stopping at the first H_λ not rejected at
level δ controls the family-wise error (fixed-sequence testing, Angelopoulos et al., "Learn then Test").
So with probability ≥ 1 − δ over the calibration units, every λ kept — in particular the most permissive,
the one returned — has R(λ) ≤ max_risk for new units exchangeable with them. When no λ passes, nothing is
answered (threshold None).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def binomial_p_value(errors: int, answered: int, max_risk: float) -> float:
    """P(Bin(answered, max_risk) ≤ errors): small when so few errors would be unlikely were the risk above
    max_risk; 1 for nothing answered (no evidence)."""
    if answered == 0:
        return 1.0
    from scipy.stats import binom  # scipy loads when a threshold is tested, not when the CLI starts

    return float(binom.cdf(errors, answered, max_risk))


@dataclass(frozen=True)
class Tested:
    """One threshold of the sequence: units answered at it, their errors and the p-value."""

    threshold: float
    answered: int
    errors: int
    p_value: float


@dataclass(frozen=True)
class RiskControl:
    """The most permissive threshold whose risk bound held (None: decline everything), and the tests run."""

    threshold: float | None
    max_risk: float
    delta: float
    units: int
    answered: int  # calibration units answered at the threshold
    errors: int
    tested: list[Tested]


def upper_risk(errors: int, answered: int, delta: float) -> float:
    """The one-sided (1 − δ) Clopper–Pearson upper bound of a risk after `errors` in `answered`."""
    from scipy.stats import beta

    return 1.0 if answered == errors else float(beta.ppf(1 - delta, errors + 1, answered - errors))


def threshold_grid(confidence: Sequence[float] | np.ndarray, correct: Sequence[int] | np.ndarray, *,
                   delta: float) -> list[float]:
    """Thresholds for `learn_then_test`, strictest first, from units *other* than the ones tested (those
    the map was fitted on, labels included): their distinct confidences, starting at the one where those
    units' upper risk bound is lowest. Fixed-sequence testing stops at the first threshold it cannot pass;
    the strictest thresholds answer few units, so little evidence, and would end it early. Starting where
    the fitting units give the tightest bound, and loosening from there, keeps the tested units' labels
    out of the choice of the sequence, which is all the guarantee needs."""
    c = np.asarray(confidence, dtype=np.float64).reshape(-1)
    wrong = np.asarray(correct, dtype=np.int64).reshape(-1) == 0
    values = np.unique(c)[::-1]
    bounds = [upper_risk(int((wrong & (c >= v)).sum()), int((c >= v).sum()), delta) for v in values]
    start = len(bounds) - 1 - int(np.argmin(bounds[::-1]))  # ties: the loosest
    return [float(v) for v in values[start:]]


def learn_then_test(confidence: Sequence[float] | np.ndarray, correct: Sequence[int] | np.ndarray,
                    thresholds: Sequence[float], *, max_risk: float, delta: float) -> RiskControl:
    """Fixed-sequence Learn-then-Test over `thresholds` (strictest, i.e. highest, first; chosen without
    these labels): the lowest threshold reached before the first H_λ that cannot be rejected at `delta`."""
    c = np.asarray(confidence, dtype=np.float64).reshape(-1)
    y = np.asarray(correct, dtype=np.int64).reshape(-1)
    if len(c) != len(y):
        raise ValueError(f"confidence and correct differ in length: {len(c)} vs {len(y)}")
    if not 0 < max_risk < 1:
        raise ValueError(f"max_risk must be in (0, 1), got {max_risk}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if any(b > a for a, b in itertools.pairwise(thresholds)):
        raise ValueError("thresholds must be in decreasing order (strictest first)")
    tested: list[Tested] = []
    chosen: Tested | None = None
    for threshold in thresholds:
        answered = c >= threshold
        n, errors = int(answered.sum()), int((answered & (y == 0)).sum())
        test = Tested(float(threshold), n, errors, binomial_p_value(errors, n, max_risk))
        tested.append(test)
        if test.p_value > delta:
            break
        chosen = test
    if chosen is None:
        return RiskControl(None, max_risk, delta, len(c), 0, 0, tested)
    return RiskControl(chosen.threshold, max_risk, delta, len(c), chosen.answered, chosen.errors, tested)
