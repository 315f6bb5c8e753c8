"""The consistency and accuracy metrics of one output set, as the tables read them: one registry.

Each metric declares, where it is defined, its label, its direction (is higher better?), what it is taken
per (the set, each judge, each accuracy similarity), how it aggregates over questions and how it is computed,
and is registered here by one lazy line. The summary, the report, the viewer, `a2c compare` and the signal
table iterate `SET_METRICS` instead of naming metrics, so a new metric is one file plus one line below.

The built-in metrics are computed where they always were (`judge_scores`, `cons_lex`, the accuracy
similarities: `a2c probe` and `a2c judge` share them) and keep their own fields in a run's rows
(`stored`); a metric with a `compute` function is computed by the metrics stage and kept under the row's
`extra`. This module imports no numpy: a config check lists the names without loading a metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from a2c.common.registry import Registry

if TYPE_CHECKING:
    import numpy as np

Per = Literal["set", "judge", "similarity"]


@dataclass(frozen=True)
class AnswerSet:
    """What a computed metric sees of one output set: its answers and, for a per-judge metric, the judge's
    n×n agreement matrix and its both-ways equivalence decisions (`Judge.equivalent`)."""

    texts: Sequence[str]
    matrix: np.ndarray | None = None
    equivalent: np.ndarray | None = None


def mean_defined(values: Iterable[float | None]) -> tuple[float | None, int]:
    """Mean over the defined values and how many `None`s were skipped; `(None, k)` if nothing is defined.

    Args:
        values: one metric value per set, None where it is undefined (NaN is refused).

    Returns:
        The mean of the defined values (None if there is none) and the number of `None`s skipped.
    """
    defined: list[float] = []
    skipped = 0
    for value in values:
        if value is None:
            skipped += 1
        elif math.isnan(value):
            raise ValueError("NaN among metric values: undefined items must be None, not NaN")
        else:
            defined.append(float(value))
    return (math.fsum(defined) / len(defined) if defined else None), skipped


@dataclass(frozen=True)
class SetMetric:
    """One number per output set (per judge, or per similarity) and how tables treat it.

    `stored` names the field of the run's metric rows that holds a built-in metric; a metric with
    `compute` is computed by the metrics stage from each set (`AnswerSet`) and kept under `extra`.
    `signal`: ranked in the signal table (how well it predicts an accurate answer)."""

    label: str
    higher_is_better: bool
    per: Per = "set"
    aggregate: Callable[[Iterable[float | None]], tuple[float | None, int]] = mean_defined
    compute: Callable[[AnswerSet], float | None] | None = None
    stored: str | None = None
    signal: bool = True

    def __post_init__(self) -> None:
        if (self.compute is None) == (self.stored is None):
            raise ValueError(f"metric {self.label!r}: give exactly one of `compute` (a new metric) and "
                             "`stored` (a built-in row field)")
        if self.compute is not None and self.per == "similarity":
            raise ValueError(f"metric {self.label!r}: a computed metric is per set or per judge")

    def as_confidence(self, value: float | None) -> float | None:
        """The value oriented so that higher = better (lower-is-better metrics negated)."""
        return value if value is None or self.higher_is_better else -value

    def as_confidences(self, values: np.ndarray) -> np.ndarray:
        """A column of values oriented as `as_confidence` orients one (NaN, undefined, stays NaN)."""
        return values if self.higher_is_better else -values

    @property
    def signed_label(self) -> str:
        """The label as a confidence: `-Entropy` for a lower-is-better metric."""
        return self.label if self.higher_is_better else f"-{self.label}"


SET_METRICS: Registry[SetMetric] = Registry("set metric", base=SetMetric, group="a2c.metrics")
SET_METRICS.register_lazy("cons_lex", "a2c.metrics.consistency:CONS_LEX")
SET_METRICS.register_lazy("cons_sem", "a2c.metrics.consistency:CONS_SEM")
SET_METRICS.register_lazy("cons_sem_accurate", "a2c.metrics.consistency:CONS_SEM_ACCURATE")
SET_METRICS.register_lazy("entropy", "a2c.metrics.consistency:ENTROPY")
SET_METRICS.register_lazy("clusters", "a2c.metrics.consistency:CLUSTERS")
SET_METRICS.register_lazy("accuracy", "a2c.metrics.accuracy:ACCURACY")


def computed_metrics() -> list[tuple[str, SetMetric, Callable[[AnswerSet], float | None]]]:
    """(name, metric, its compute function) of the metrics the metrics stage computes itself (kept under
    a row's `extra`), in name order."""
    return [(name, metric, metric.compute) for name, metric in SET_METRICS.items()
            if metric.compute is not None]
