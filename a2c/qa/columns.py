"""A run's metric, uncertainty and selection-score rows as columns of numbers, for the summary and report.

At 100,000 questions a run holds 400,000 metric and uncertainty rows and a million selection-score rows;
as typed row objects they take gigabytes, as columns (one float64 per value, NaN where a row has None) a
few hundred bytes per question. The columns are filled while the rows stream from their files
(`Store.iter_rows`), so no more than one row object is alive at a time, and the numbers are the rows'
own floats: a summary computed from them is the one computed from the rows, to the bit.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from a2c.qa.rows import PHASES, SOURCES, Accuracy, MetricRow, Phase, SelectionScoreRow, Source, UncertaintyRow

JUDGE_FIELDS = ("cons_sem", "entropy", "clusters", "cons_sem_accurate")
ACCURACY_FIELDS = tuple(Accuracy.model_fields)
SOURCE_CODE = {s: k for k, s in enumerate(SOURCES)}
PHASE_CODE = {p: k for k, p in enumerate(PHASES)}


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def optional(values: np.ndarray) -> list[float | None]:
    """A column back as the rows' values: None where undefined (what `Mean.of` and the pairings take)."""
    return [None if math.isnan(v) else v for v in values.tolist()]


class _Floats:
    """Named float columns filled a row at a time; a name first seen late is NaN in the earlier rows."""

    def __init__(self) -> None:
        self.rows = 0
        self._columns: dict[tuple[str, ...], array[float]] = {}

    def add(self, key: tuple[str, ...], value: float | None) -> None:
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = array("d", [math.nan]) * self.rows
        column.append(_number(value))

    def end_row(self) -> None:
        self.rows += 1
        for column in self._columns.values():
            if len(column) < self.rows:
                column.append(math.nan)

    def arrays(self) -> dict[tuple[str, ...], np.ndarray]:
        return {key: np.frombuffer(column, dtype=np.float64) for key, column in self._columns.items()}


@dataclass
class _Keyed:
    """Question ids interned to indexes, with source and phase codes per row."""

    ids: list[str] = field(default_factory=list)  # question ids, in the order first seen
    _index: dict[str, int] = field(default_factory=dict)
    _question: array[int] = field(default_factory=lambda: array("q"))
    _source: array[int] = field(default_factory=lambda: array("b"))
    _phase: array[int] = field(default_factory=lambda: array("b"))

    def key(self, qid: str, source: Source, phase: Phase | None = None) -> None:
        index = self._index.get(qid)
        if index is None:
            index = self._index[qid] = len(self.ids)
            self.ids.append(qid)
        self._question.append(index)
        self._source.append(SOURCE_CODE[source])
        self._phase.append(-1 if phase is None else PHASE_CODE[phase])

    def codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.frombuffer(self._question, dtype=np.int64), np.frombuffer(self._source, dtype=np.int8),
                np.frombuffer(self._phase, dtype=np.int8))


@dataclass(frozen=True)
class Columns:
    """What every kind of columns has: per row its question (index into `ids`), source and phase codes."""

    ids: list[str]
    question: np.ndarray
    source: np.ndarray
    phase: np.ndarray

    def __len__(self) -> int:
        return len(self.question)

    def where(self, source: Source, phase: Phase | None = None) -> np.ndarray:
        """Row indexes of a source (and phase), in file order."""
        mask = self.source == SOURCE_CODE[source]
        if phase is not None:
            mask &= self.phase == PHASE_CODE[phase]
        return np.flatnonzero(mask)


@dataclass(frozen=True)
class MetricColumns(Columns):
    """`metrics.jsonl` as columns: `n`, `n_accurate` (−1: no references), `cons_lex`, per judge its
    `JudgeScores` fields (`judge(field, name)`) and per similarity the `Accuracy` fields (`accuracy(...)`,
    NaN where a set has none) and the computed metrics (`extra(key)`)."""

    n: np.ndarray
    n_accurate: np.ndarray
    values: dict[tuple[str, ...], np.ndarray]

    @classmethod
    def read(cls, rows: Iterable[MetricRow]) -> MetricColumns:
        keyed, floats = _Keyed(), _Floats()
        n, n_accurate = array("q"), array("q")
        for r in rows:
            keyed.key(r.id, r.source, r.phase)
            n.append(r.n)
            n_accurate.append(-1 if r.n_accurate is None else r.n_accurate)
            floats.add(("cons_lex",), r.cons_lex)
            for judge, scores in r.judges.items():
                for name in JUDGE_FIELDS:
                    floats.add((name, judge), getattr(scores, name))
            for similarity, accuracy in r.accuracy.items():
                for name in ACCURACY_FIELDS:
                    floats.add(("accuracy", similarity, name), None if accuracy is None else getattr(accuracy,
                                                                                                  name))
            for key, value in r.extra.items():  # the registered metrics the stage computed
                floats.add(("extra", key), value)
            floats.end_row()
        return cls(keyed.ids, *keyed.codes(), np.frombuffer(n, dtype=np.int64),
                   np.frombuffer(n_accurate, dtype=np.int64), floats.arrays())

    @property
    def referenced(self) -> np.ndarray:
        return self.n_accurate >= 0

    def _column(self, key: tuple[str, ...]) -> np.ndarray:
        found = self.values.get(key)
        return np.full(len(self), math.nan) if found is None else found

    @property
    def cons_lex(self) -> np.ndarray:
        return self._column(("cons_lex",))

    def judge(self, name: str, judge: str) -> np.ndarray:
        return self._column((name, judge))

    def accuracy(self, similarity: str, name: str = "acc") -> np.ndarray:
        return self._column(("accuracy", similarity, name))

    def extra(self, key: str) -> np.ndarray:
        """A computed metric's column (`a2c.qa.metric_columns`), by its key."""
        return self._column(("extra", key))

    def has_extra(self, key: str) -> bool:
        """Whether any row holds this computed metric (a metric registered after the run is held by none)."""
        return ("extra", key) in self.values


@dataclass(frozen=True)
class UncertaintyColumns(Columns):
    """`uncertainty.jsonl` as columns: per set its answers and accurate answers (−1: no references), every
    per-set measure of every judge (`sets[(measure, graph)]`), and the per-answer values laid end to end
    (`answers[(measure, graph)]`, with `answer_rows` saying whose; a set whose values are None has none)
    next to the answers' accuracy bits (`accurate`, `accurate_rows`)."""

    answers_n: np.ndarray
    accurate_n: np.ndarray
    sets: dict[tuple[str, ...], np.ndarray]
    answers: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]  # key → (values, row of each value)
    accurate: np.ndarray  # bits of the referenced rows' answers, end to end
    accurate_rows: np.ndarray

    @classmethod
    def read(cls, rows: Iterable[UncertaintyRow]) -> UncertaintyColumns:
        keyed, floats = _Keyed(), _Floats()
        answers_n, accurate_n = array("q"), array("q")
        per_answer: dict[tuple[str, str], tuple[array[float], array[int]]] = {}
        accurate, accurate_rows = array("b"), array("q")
        for k, r in enumerate(rows):
            keyed.key(r.id, r.source, r.phase)
            answers_n.append(len(r.accurate or ()))
            accurate_n.append(-1 if r.accurate is None else sum(r.accurate))
            if r.accurate is not None:
                accurate.extend(r.accurate)
                accurate_rows.extend([k] * len(r.accurate))
            for measure, values in r.sets.items():
                for graph, value in values.items():
                    floats.add((measure, graph), value)
            for measure, lists in r.answers.items():
                for graph, answer_values in lists.items():
                    # a key whose values are all None still names a (then undefined) signal
                    found, owners = per_answer.setdefault((measure, graph), (array("d"), array("q")))
                    if answer_values is not None:
                        found.extend(answer_values)
                        owners.extend([k] * len(answer_values))
            floats.end_row()
        return cls(keyed.ids, *keyed.codes(), np.frombuffer(answers_n, dtype=np.int64),
                   np.frombuffer(accurate_n, dtype=np.int64), floats.arrays(),
                   {key: (np.frombuffer(v, dtype=np.float64), np.frombuffer(o, dtype=np.int64))
                    for key, (v, o) in per_answer.items()},
                   np.frombuffer(accurate, dtype=np.int8).astype(bool),
                   np.frombuffer(accurate_rows, dtype=np.int64))

    def measures(self) -> list[tuple[str, str]]:
        """The (measure, judge or graph) pairs of the per-set values, in the order first seen."""
        return [(measure, graph) for measure, graph in self.sets]


@dataclass(frozen=True)
class SelectionColumns(Columns):
    """`selection_scores.jsonl` as columns: per row its method (index into `methods`), picked, unparsed,
    don't-know (−1: the method has no such option), calls, referenced and per similarity the pick's
    accuracy bit (NaN: none)."""

    methods: list[str]
    method: np.ndarray
    picked: np.ndarray
    unparsed: np.ndarray
    dont_know: np.ndarray
    calls: np.ndarray
    referenced: np.ndarray
    acc: dict[str, np.ndarray]

    @classmethod
    def read(cls, rows: Iterable[SelectionScoreRow]) -> SelectionColumns:
        keyed, floats = _Keyed(), _Floats()
        methods: dict[str, int] = {}
        method, calls = array("q"), array("q")
        flags = {name: array("b") for name in ("picked", "unparsed", "dont_know", "referenced")}
        for r in rows:
            keyed.key(r.id, r.source)
            method.append(methods.setdefault(r.method, len(methods)))
            calls.append(r.calls)
            flags["picked"].append(r.picked)
            flags["unparsed"].append(r.unparsed)
            flags["dont_know"].append(-1 if r.dont_know is None else int(r.dont_know))
            flags["referenced"].append(r.referenced)
            for similarity, accuracy in r.accuracy.items():
                floats.add((similarity,), None if accuracy is None else accuracy.acc)
            floats.end_row()
        bits = {name: np.frombuffer(values, dtype=np.int8) for name, values in flags.items()}
        return cls(keyed.ids, *keyed.codes(), list(methods), np.frombuffer(method, dtype=np.int64),
                   bits["picked"].astype(bool), bits["unparsed"].astype(bool), bits["dont_know"],
                   np.frombuffer(calls, dtype=np.int64), bits["referenced"].astype(bool),
                   {key[0]: values for key, values in floats.arrays().items()})

    def accuracy(self, similarity: str) -> np.ndarray:
        found = self.acc.get(similarity)
        return np.full(len(self), math.nan) if found is None else found

