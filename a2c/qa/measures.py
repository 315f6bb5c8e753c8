"""The field's black-box uncertainty measures (`a2c.metrics.uncertainty.UNCERTAINTY_MEASURES`) of one output
set, from the matrices the judges stage stored: no model, a few eigendecompositions per set.

Which judge feeds which measure follows the measure's `statistic`: a similarity measure takes the matrix of
every judge whose higher score means more alike (not `contra`, whose matrix is a contradiction
probability); an equivalence measure takes every judge's both-ways decisions (`Judge.equivalent`); KLE's
NLI graph needs the `entail` and `contra` judges together and is keyed `entail+contra`. A white-box
measure (statistic "tokens") reads the set's answers' chosen-token log-probabilities instead, keyed
`tokens`, where every answer of the set has them (a run with `variation.logprobs`, or a samples file
that gives them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from a2c.judges import Judge
from a2c.metrics.matrices import same_shape
from a2c.metrics.uncertainty import UNCERTAINTY_MEASURES, MatrixStack, Measure, Statistic, nli_weights

NLI_PAIR = ("entail", "contra")
NLI_GRAPH = "+".join(NLI_PAIR)
TOKENS = "tokens"  # the key of a white-box measure's values (it reads no judge)
TokenSet = Sequence[np.ndarray] | None  # a set's answers' chosen-token log-probabilities; None: not all given

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


PerSet = dict[str, dict[str, float | None]]  # measure → judge (or graph) → value
PerAnswer = dict[str, dict[str, list[float] | None]]
Where = tuple[int, str]  # (set, judge or graph key)
Stacks = list[tuple[list[Where], MatrixStack]]  # stacks, each with where its matrices come from
_STACK_NAMES: Mapping[Statistic, str] = {
    "similarity": "similarity matrix", "equivalence": "equivalence matrix", "nli": "weight matrix"}


def _stacks(statistic: Statistic, inputs: list[tuple[int, str, np.ndarray]]) -> Stacks:
    """The inputs grouped into stacks of one shape and dtype, each with the (set, key) of its matrices."""
    return [([(inputs[j][0], inputs[j][1]) for j in members],
             MatrixStack(np.stack([inputs[j][2] for j in members]), _STACK_NAMES[statistic]))
            for members in same_shape([matrix for _, _, matrix in inputs])]


def chunk_measures(sets: Sequence[tuple[Matrices, Matrices]], judges: Mapping[str, Judge],
                   tokens: Sequence[TokenSet] | None = None) -> list[tuple[PerSet, PerAnswer]]:
    """(per-set values, per-answer values) of each set, given as (its judges' matrices, their decisions
    (`Judge.equivalent`)); None below two answers. Every measure runs over stacks of the sets' same-size
    matrices (`MatrixStack`), and a statistic's stacks are made once for all the measures that read them:
    the values are those of each set on its own, at a fraction of the calls."""
    per_set: list[dict[str, dict[str, Any]]] = [{} for _ in sets]
    per_answer: list[dict[str, dict[str, Any]]] = [{} for _ in sets]
    stacked: dict[Statistic, tuple[list[Where], Stacks]] = {}
    for name, measure in UNCERTAINTY_MEASURES.items(as_registered=True):  # the order the rows keep
        if measure.statistic == "tokens":
            _token_measure(name, measure, tokens or [None] * len(sets), per_answer)
            continue
        if measure.statistic not in stacked:
            inputs = [(i, key, np.asarray(statistic)) for i, (matrices, equivalent) in enumerate(sets)
                      for key, statistic in STATISTICS[measure.statistic](matrices, judges, equivalent)]
            keys = [(i, key) for i, key, _ in inputs]
            stacked[measure.statistic] = keys, _stacks(measure.statistic, inputs)
        keys, stacks = stacked[measure.statistic]
        columns = [row.setdefault(name, {}) for row in (per_answer if measure.per_answer else per_set)]
        for i, key in keys:  # each set's keys in the order given, whatever stack they fall in
            columns[i][key] = None
        for positions, stack in stacks:
            for (i, key), value in zip(positions, measure.over(stack), strict=True):
                columns[i][key] = None if value is None else \
                    [float(v) for v in np.asarray(value)] if measure.per_answer else float(value)
    # a measure none of a set's matrices feeds (KLE without NLI judges) is left out of its rows
    return [({m: v for m, v in ps.items() if v}, {m: v for m, v in pa.items() if v})
            for ps, pa in zip(per_set, per_answer, strict=True)]


def _token_measure(name: str, measure: Measure, tokens: Sequence[TokenSet], per_answer: list[dict[str, Any]]
                   ) -> None:
    """A white-box measure (one value per answer) of every set of two answers or more whose answers all
    have log-probabilities, all sets in one call; a set with an answer of no tokens (a value that is not
    finite) has none. Sets without log-probabilities get no entry, so a run without them writes what it
    wrote before these measures existed."""
    if not measure.per_answer:
        raise ValueError(f"uncertainty measure {name!r}: a token measure gives one value per answer")
    given = [i for i, t in enumerate(tokens) if t is not None and len(t) >= 2]
    if not given:
        return
    answers = [np.asarray(a, dtype=np.float64) for i in given for a in tokens[i] or ()]
    values = np.asarray(measure.function(answers), dtype=np.float64)
    at = 0
    for i in given:
        n = len(tokens[i] or ())
        part, at = values[at:at + n], at + n
        per_answer[i].setdefault(name, {})[TOKENS] = [float(v) for v in part] \
            if bool(np.isfinite(part).all()) else None


def set_measures(matrices: Matrices, judges: Mapping[str, Judge], equivalent: Matrices | None = None
                 ) -> tuple[PerSet, PerAnswer]:
    """`chunk_measures` of one set; `equivalent`: its judges' decisions where the caller has made them
    already (they are made here otherwise)."""
    if equivalent is None:
        equivalent = {name: judges[name].equivalent(m) for name, m in matrices.items()}
    return chunk_measures([(matrices, equivalent)], judges)[0]
