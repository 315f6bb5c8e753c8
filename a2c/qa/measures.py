"""The field's black-box uncertainty measures (`a2c.metrics.uncertainty.UNCERTAINTY_MEASURES`) of one output
set, from the matrices the judges stage stored: no model, a few eigendecompositions per set.

Which judge feeds which measure follows the measure's `statistic`: a similarity measure takes the matrix of
every judge whose higher score means more alike (not `contra`, whose matrix is a contradiction
probability); an equivalence measure takes every judge's both-ways decisions (`Judge.equivalent`); KLE's
NLI graph needs the `entail` and `contra` judges together and is keyed `entail+contra`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np

from a2c.judges import Judge
from a2c.metrics.uncertainty import UNCERTAINTY_MEASURES, Statistic, nli_weights

NLI_PAIR = ("entail", "contra")
NLI_GRAPH = "+".join(NLI_PAIR)

Matrices = Mapping[str, np.ndarray]  # judge name → the set's matrix
Inputs = Iterator[tuple[str, np.ndarray]]  # (judge or graph key, what the measure is computed on)


def _similarities(matrices: Matrices, judges: Mapping[str, Judge], equivalent: Matrices) -> Inputs:
    return ((name, m) for name, m in matrices.items() if judges[name].higher_is_consistent)


def _equivalences(matrices: Matrices, judges: Mapping[str, Judge], equivalent: Matrices) -> Inputs:
    return ((name, equivalent[name]) for name in matrices)


def _nli_graph(matrices: Matrices, judges: Mapping[str, Judge], equivalent: Matrices) -> Inputs:
    if all(name in matrices for name in NLI_PAIR):
        yield NLI_GRAPH, nli_weights(*(matrices[name] for name in NLI_PAIR))


STATISTICS: Mapping[Statistic, Callable[[Matrices, Mapping[str, Judge], Matrices], Inputs]] = {
    "similarity": _similarities, "equivalence": _equivalences, "nli": _nli_graph}


def measure_label(measure: str) -> str:
    """The measure's declared label; the name for one this a2c does not know (an older run's)."""
    return UNCERTAINTY_MEASURES.get(measure).label if measure in UNCERTAINTY_MEASURES else measure


def set_measures(matrices: Matrices, judges: Mapping[str, Judge], equivalent: Matrices | None = None
                 ) -> tuple[dict[str, dict[str, float | None]], dict[str, dict[str, list[float] | None]]]:
    """(per-set values, per-answer values), each measure → judge (or graph) → value; None below two
    answers. `equivalent`: each judge's decisions on the set (`Judge.equivalent`) where the caller has
    made them already (the metrics stage, for the set's scores), so they are not made twice."""
    if equivalent is None:
        equivalent = {name: judges[name].equivalent(m) for name, m in matrices.items()}
    per_set: dict[str, dict[str, float | None]] = {}
    per_answer: dict[str, dict[str, list[float] | None]] = {}
    for name, measure in UNCERTAINTY_MEASURES.items(as_registered=True):  # the order the rows keep
        for key, statistic in STATISTICS[measure.statistic](matrices, judges, equivalent):
            value = measure.function(statistic)
            if measure.per_answer:
                per_answer.setdefault(name, {})[key] = None if value is None else \
                    [float(v) for v in np.asarray(value)]
            else:
                per_set.setdefault(name, {})[key] = None if value is None else float(value)
    return per_set, per_answer
