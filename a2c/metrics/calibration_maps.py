"""Monotone maps from a raw score to P(correct), fitted with scikit-learn and kept as plain numbers.

A fitted map is stored as its parameters (isotonic: the knots sklearn's `IsotonicRegression` interpolates
between; Platt: the logistic's slope and intercept), never as a pickle, so a calibration file is data a
server can load without running code from it, and it predicts without scikit-learn's objects. Both maps
are non-decreasing in the score (isotonic by construction, Platt's slope clipped at 0), so a higher
consistency never means a lower confidence.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, PlainValidator, model_validator
from pydantic_core import PydanticCustomError

from a2c.common.registry import Registry

MapKind = Literal["isotonic", "platt"]


# -- numbers as a file must hold them ------------------------------------------------------------------

def shown(value: Any) -> str:
    """A JSON value as a file spells it (NaN, Infinity, true, "text"), kept short, for an error line."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _span(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" {'>' if low_open else '≥'} {low:g}"
    if low is None:
        return f" {'<' if high_open else '≤'} {high:g}"
    return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def number(low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False) -> PlainValidator:
    """A pydantic validator of a finite JSON number within the bounds (a bool, a string or NaN is refused),
    whose error says the range and what was given: `must be a finite number in [0, 1], got NaN`.

    Args:
        low, high: the bounds (None: unbounded on that side).
        low_open, high_open: whether a bound itself is excluded.

    Returns:
        The validator, for `Annotated[float, number(...)]`; it yields a float.
    """
    span = _span(low, high, low_open, high_open)

    def check(value: Any) -> float:
        as_float = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                as_float = float(value)
            except OverflowError:
                as_float = None
        if as_float is None or not math.isfinite(as_float) or \
                (low is not None and (as_float <= low if low_open else as_float < low)) or \
                (high is not None and (as_float >= high if high_open else as_float > high)):
            raise PydanticCustomError("number", "must be a finite number{span}, got {got}",
                                      {"span": span, "got": shown(value)})
        return as_float

    return PlainValidator(check)


def whole(low: int | None = None) -> PlainValidator:
    """A pydantic validator of a whole JSON number ≥ `low` (a bool, 2.0 or a string is refused).

    Args:
        low: the least value allowed (None: any).

    Returns:
        The validator, for `Annotated[int, whole(...)]`; it yields an int.
    """
    span = "" if low is None else f" ≥ {low}"

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):
            raise PydanticCustomError("whole_number", "must be a whole number{span}, got {got}",
                                      {"span": span, "got": shown(value)})
        return int(value)

    return PlainValidator(check)


Finite = Annotated[float, number()]
Probability = Annotated[float, number(0.0, 1.0)]


def inconsistent(message: str) -> PydanticCustomError:
    """A model validator's error whose text is `message` as given (a file's fields that disagree).

    Args:
        message: the line, naming the field.

    Returns:
        The error to raise.
    """
    return PydanticCustomError("inconsistent", "{message}", {"message": message})


class FittedMap(BaseModel):
    """A calibration map's parameters; `predict` maps raw scores to probabilities in [0, 1].

    What a file may hold is what a fit makes: finite numbers; isotonic knots with x strictly increasing and
    y non-decreasing in [0, 1] (no slope or intercept); a Platt slope ≥ 0 and intercept (no knots). So a
    map read is monotone, and its confidences are probabilities."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    kind: MapKind
    # isotonic: knots (x increasing, y non-decreasing in [0, 1]); platt: slope ≥ 0 and intercept
    x: list[Finite] = []
    y: list[Probability] = []
    slope: Annotated[float, number(0.0)] = 0.0
    intercept: Finite = 0.0

    @model_validator(mode="after")
    def _shape(self) -> FittedMap:
        if self.kind == "platt":
            if self.x or self.y:
                raise inconsistent("a Platt map has a slope and an intercept, not knots (x, y)")
            return self
        if not self.x or len(self.x) != len(self.y):
            raise inconsistent(f"an isotonic map needs as many y as x knots, at least one (x has "
                                f"{len(self.x)}, y {len(self.y)})")
        if self.slope or self.intercept:
            raise inconsistent("an isotonic map has knots, not a slope or intercept")
        for i in range(1, len(self.x)):
            if self.x[i] <= self.x[i - 1]:
                raise inconsistent(f"the knots' x must increase strictly, but x[{i}] = {self.x[i]:g} "
                                    f"follows x[{i - 1}] = {self.x[i - 1]:g}")
            if self.y[i] < self.y[i - 1]:
                raise inconsistent(f"the knots' y must be non-decreasing (a monotone map), but y[{i}] = "
                                    f"{self.y[i]:g} follows y[{i - 1}] = {self.y[i - 1]:g}")
        return self

    def predict(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        s = np.asarray(scores, dtype=np.float64)
        if self.kind == "isotonic":
            return np.interp(s, self.x, self.y)  # clipped to the end knots outside, as sklearn's "clip"
        with np.errstate(over="ignore"):  # exp(709+) is inf, and the curve there is 0, as it should be
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
CALIBRATION_METHODS: Registry[Fit] = Registry("calibration method", group="a2c.calibration")
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
