"""What the metrics stage needs for its selection-score rows, kept while it goes chunk by chunk.

A method's pick is one of its set's answers (or the text of the "don't know" option), and the before phase
scores every answer of a chunk in one batched call anyway. Scoring each pick there, with its set, rather than
once more in a pass of its own after both phases, costs a lookup instead of a second TruthfulQA scoring of
the same text against the same record (the same function of the same inputs: the same floats). The picks'
fields are then held until their rows are written: arrays of floats, not an object per pick (100,000
questions × 2 sources × 4 methods × 2 similarities: 38 MB), dropped before the summary is computed.
"""

from __future__ import annotations

import numpy as np

from a2c.metrics import expected_random_accuracy
from a2c.qa.rows import SOURCES, Accuracy, Question, SelectionRow, SelectionScoreRow, Source
from a2c.qa.scoring import ScoreColumns
from a2c.qa.selection import RANDOM
from a2c.run.runfiles import RunFileError

_FIELDS = tuple(Accuracy.model_fields)


class SelectionAccuracy:
    """Per question, source and method, the pick's accuracy fields per similarity; per question and source,
    whether the set has a candidate and, per similarity, the expected accuracy of a uniformly drawn one
    (`random`, NaN: none)."""

    def __init__(self, questions: list[Question], methods: list[str], sims: list[str]) -> None:
        self._index = {q.id: k for k, q in enumerate(questions)}
        self._methods = {m: k for k, m in enumerate(methods)}
        self._sims = sims
        sets = (len(questions), len(SOURCES))
        self._has_candidate = np.zeros(sets, dtype=bool)
        self._random = np.full((*sets, len(sims), len(_FIELDS)), np.nan)
        self._scored = np.zeros((*sets, len(methods)), dtype=bool)
        self._picks = np.zeros((*sets, len(methods), len(sims), len(_FIELDS)))

    def put_set(self, question: str, source: Source, has_candidate: bool, per_sim: dict[str, ScoreColumns]
                ) -> None:
        """A set's `random` entry: `per_sim` holds each similarity's scores of its answers (empty: no
        references)."""
        at = (self._index[question], SOURCES.index(source))
        self._has_candidate[at] = has_candidate
        for k, sim in enumerate(self._sims):
            if sim in per_sim and len(per_sim[sim]):
                self._random[at][k] = [expected_random_accuracy(getattr(per_sim[sim], name).tolist())
                                       for name in _FIELDS]

    def put_picks(self, picks: list[SelectionRow], per_sim: dict[str, ScoreColumns]) -> None:
        """Scored picks: entry i of each similarity's columns is `picks[i]`'s; a pick a grader left ungraded
        (NaN) stays unscored, so it has no accuracy rather than a NaN one."""
        if not picks:
            return
        at = (np.array([self._index[p.id] for p in picks]),
              np.array([SOURCES.index(p.source) for p in picks]), np.array([self._method(p) for p in picks]))
        graded = np.ones(len(picks), dtype=bool)
        for sim in self._sims:
            graded &= ~np.isnan(per_sim[sim].acc)
        self._scored[at] = graded
        for k, sim in enumerate(self._sims):
            self._picks[(*at, k)] = np.stack([getattr(per_sim[sim], name) for name in _FIELDS], axis=1)

    def _method(self, pick: SelectionRow) -> int:
        if pick.method not in self._methods:
            raise RunFileError(f"selections: a pick of method {pick.method!r}, which the experiment does not "
                               f"select with ({', '.join(self._methods) or 'none'})")
        return self._methods[pick.method]

    def pick_row(self, pick: SelectionRow, referenced: bool) -> SelectionScoreRow:
        """The pick's row (a question without references has no accuracy, an unscored pick none)."""
        at = (self._index[pick.id], SOURCES.index(pick.source), self._method(pick))
        scored = bool(self._scored[at])
        accuracy = {sim: Accuracy.model_validate(dict(zip(_FIELDS, values.tolist(), strict=True)))
                    if scored else None for sim, values in zip(self._sims, self._picks[at], strict=True)}
        return SelectionScoreRow(id=pick.id, source=pick.source, method=pick.method,
                                 picked=pick.text is not None, unparsed=pick.unparsed,
                                 dont_know=pick.dont_know, calls=pick.calls,
                                 accuracy=accuracy if referenced else {})

    def random_row(self, question: str, source: Source, referenced: bool) -> SelectionScoreRow:
        """The `random` row of a set: the exact expectation over its candidates, not a draw."""
        at = (self._index[question], SOURCES.index(source))
        accuracy = {sim: None if np.isnan(v[0]) else
                    Accuracy.model_validate(dict(zip(_FIELDS, v.tolist(), strict=True)))
                    for sim, v in zip(self._sims, self._random[at], strict=True)} if referenced else {}
        return SelectionScoreRow(id=question, source=source, method=RANDOM,
                                 picked=bool(self._has_candidate[at]), unparsed=False, dont_know=None,
                                 calls=0, accuracy=accuracy)
