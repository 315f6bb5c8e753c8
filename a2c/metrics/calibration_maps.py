"""Monotone maps from a raw score to P(correct), fitted with scikit-learn and kept as plain numbers.

A fitted map is stored as its parameters (isotonic: the knots sklearn's `IsotonicRegression` interpolates
between; Platt: the logistic's slope and intercept), never as a pickle, so a calibration file is data a
server can load without running code from it, and it predicts without scikit-learn's objects. Both maps
are non-decreasing in the score (isotonic by construction, Platt's slope clipped at 0), so a higher
consistency never means a lower confidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from a2c.common.registry import Registry

MapKind = Literal["isotonic", "platt"]


class FittedMap(BaseModel):
    """A calibration map's parameters; `predict` maps raw scores to probabilities in [0, 1]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: MapKind
    # isotonic: knots (x increasing, y non-decreasing in [0, 1]); platt: slope ≥ 0 and intercept
    x: list[float] = Field(default_factory=list)
    y: list[float] = Field(default_factory=list)
    slope: float = 0.0
    intercept: float = 0.0

    @model_validator(mode="after")
    def _shape(self) -> FittedMap:
        if self.kind == "isotonic":
            x, y = np.asarray(self.x), np.asarray(self.y)
            if len(x) == 0 or len(x) != len(y):
                raise ValueError("an isotonic map needs as many y as x knots, at least one")
            if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
                raise ValueError("isotonic knots must be finite")
            if np.any(np.diff(x) < 0) or np.any(np.diff(y) < 0) or np.any((y < 0) | (y > 1)):
                raise ValueError("isotonic knots must increase in x and be non-decreasing in y within [0, 1]")
        elif not (np.isfinite(self.slope) and np.isfinite(self.intercept) and self.slope >= 0):
            raise ValueError("a Platt map needs a finite slope ≥ 0 and a finite intercept")
        return self

    def predict(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        s = np.asarray(scores, dtype=np.float64)
        if self.kind == "isotonic":
            return np.interp(s, self.x, self.y)  # clipped to the end knots outside, as sklearn's "clip"
        out: np.ndarray = 1.0 / (1.0 + np.exp(-(self.slope * s + self.intercept)))
        return out


def _isotonic(scores: np.ndarray, correct: np.ndarray) -> FittedMap:
    """Isotonic regression: a non-decreasing step map, no shape assumed (wants more questions)."""
    from sklearn.isotonic import IsotonicRegression

    fitted = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    fitted.fit(scores, correct.astype(np.float64))
    return FittedMap(kind="isotonic", x=[float(v) for v in fitted.X_thresholds_],
                     y=[float(v) for v in fitted.y_thresholds_])


def _platt(scores: np.ndarray, correct: np.ndarray) -> FittedMap:
    """Platt scaling: a logistic curve in the score, two parameters (smooth, fits from few questions)."""
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(correct)) < 2:  # one class: the constant map at its (clipped) rate
        rate = float(np.clip(correct.mean(), 1e-6, 1 - 1e-6))
        return FittedMap(kind="platt", slope=0.0, intercept=float(np.log(rate / (1 - rate))))
    fitted = LogisticRegression(C=1e6).fit(scores.reshape(-1, 1), correct)
    slope, intercept = float(fitted.coef_[0, 0]), float(fitted.intercept_[0])
    if slope < 0:  # a score that ranks backwards gets no slope: the base rate, not an inverted map
        rate = float(np.clip(correct.mean(), 1e-6, 1 - 1e-6))
        slope, intercept = 0.0, float(np.log(rate / (1 - rate)))
    return FittedMap(kind="platt", slope=slope, intercept=intercept)


Fit = Callable[[np.ndarray, np.ndarray], FittedMap]
CALIBRATION_METHODS: Registry[Fit] = Registry("calibration method")
CALIBRATION_METHODS.register("isotonic")(_isotonic)
CALIBRATION_METHODS.register("platt")(_platt)


def fit_map(method: str, scores: Sequence[float] | np.ndarray, correct: Sequence[int] | np.ndarray
            ) -> FittedMap:
    """P(correct | score) fitted by `method` (a `CALIBRATION_METHODS` name) on finite scores, 0/1 labels."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(correct, dtype=np.int64).reshape(-1)
    if len(s) != len(y) or len(s) == 0:
        raise ValueError(f"need as many labels as scores, at least one: {len(s)} scores, {len(y)} labels")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    return CALIBRATION_METHODS.get(method)(s, y)
