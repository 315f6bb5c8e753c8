"""The QA tables' columns of the registered set metrics (`a2c.metrics.set_metrics.SET_METRICS`).

A metric the metrics stage computes is kept in each metric row's `extra` under its column key: its name,
or `name.judge` for a per-judge metric. The summary, the report, the signal table, the viewer and
`a2c compare` list these columns from here, so a new metric shows up in all of them unedited.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from a2c.judges import JUDGES
from a2c.metrics.set_metrics import AnswerSet, SetMetric, computed_metrics


def judge_label(judge: str) -> str:
    """What tables call a judge (its registry entry's label; the name for one this a2c does not know)."""
    return JUDGES.get(judge).label if judge in JUDGES else judge


@dataclass(frozen=True)
class MetricColumn:
    """One computed metric, for one judge when it is per judge."""

    key: str
    metric: SetMetric
    judge: str | None
    compute: Callable[[AnswerSet], float | None]

    @property
    def label(self) -> str:
        return self.metric.label if self.judge is None else f"{judge_label(self.judge)} {self.metric.label}"

    @property
    def signed_label(self) -> str:
        """The label as a confidence (`-X` for a lower-is-better metric), as the signal table names it."""
        return self.label if self.metric.higher_is_better else f"-{self.label}"

    @property
    def heading(self) -> str:
        """The label with the direction spelled out where lower is better (the before → after table)."""
        return self.label if self.metric.higher_is_better else f"{self.label} (lower = more consistent)"


def computed_columns(judges: Sequence[str]) -> list[MetricColumn]:
    """The columns of every computed metric for these judges, in the registry's order."""
    columns = []
    for name, metric, compute in computed_metrics():
        if metric.per == "judge":
            columns += [MetricColumn(f"{name}.{judge}", metric, judge, compute) for judge in judges]
        else:
            columns.append(MetricColumn(name, metric, None, compute))
    return columns


def compute_columns(columns: Sequence[MetricColumn], texts: Sequence[str],
                    judged: dict[str, AnswerSet]) -> dict[str, float | None]:
    """Each column's value for one set: `judged` holds, per judge, the set with that judge's matrices."""
    return {c.key: c.compute(judged[c.judge] if c.judge is not None else AnswerSet(texts)) for c in columns}
