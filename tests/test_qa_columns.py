"""The summary computed from columns (`a2c.qa.columns`) is the one computed from the rows: random metric,
uncertainty and selection-score rows (undefined values, questions missing a phase or a method, keys first
seen late) give the same columns, means, paired intervals and selection table as a plain pass over the
row objects."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.metrics.sets import JudgeScores
from a2c.metrics.signal import signal
from a2c.qa.columns import MetricColumns, SelectionColumns, UncertaintyColumns, optional
from a2c.qa.rows import PHASES, SOURCES, Accuracy, MetricRow, SelectionScoreRow, UncertaintyRow
from a2c.qa.summary import (
    Mean,
    answer_groups,
    before_after_changes,
    consistency_signal,
    graph_label,
    paired,
    signal_groups,
    summarize_selection,
)

JUDGES = ("rouge1", "exact")
SIMS = ("rouge1", "bleu")
maybe = st.one_of(st.none(), st.floats(0, 1))


@st.composite
def metric_rows(draw: st.DrawFn) -> list[MetricRow]:
    rows = []
    for q in range(draw(st.integers(0, 12))):
        referenced = draw(st.booleans())
        for source in SOURCES:
            for phase in draw(st.sampled_from([("before",), ("before", "after"), ("after",)])):
                n = draw(st.integers(0, 5))
                rows.append(MetricRow(
                    id=f"q{q}", source=source, phase=phase, n=n,
                    n_accurate=draw(st.integers(0, n)) if referenced else None, cons_lex=draw(maybe),
                    judges={j: JudgeScores(cons_sem=draw(maybe), entropy=draw(maybe),
                                           clusters=draw(st.integers(0, 5)), cons_sem_accurate=draw(maybe))
                            for j in JUDGES},
                    accuracy={s: None if draw(st.booleans()) else
                              Accuracy(max_true=draw(st.floats(0, 1)), diff=draw(st.floats(-1, 1)),
                                       acc=draw(st.sampled_from([0.0, 1.0])))
                              for s in SIMS} if referenced else {}))
    return rows


@settings(max_examples=40, deadline=None)
@given(metric_rows())
def test_metric_columns_hold_the_rows_values(rows):
    columns = MetricColumns.read(iter(rows))
    assert len(columns) == len(rows)
    assert [columns.ids[q] for q in columns.question] == [r.id for r in rows]
    assert optional(columns.cons_lex) == [r.cons_lex for r in rows]
    for j in JUDGES:
        assert optional(columns.judge("entropy", j)) == [r.judges[j].entropy for r in rows]
        cons_sem = [r.judges[j].cons_sem for r in rows]
        assert Mean.of(optional(columns.judge("cons_sem", j))) == Mean.of(cons_sem)
    for s in SIMS:
        assert optional(columns.accuracy(s, "diff")) == [a.diff if (a := r.accuracy.get(s)) else None
                                                         for r in rows]
    assert columns.referenced.tolist() == [r.referenced for r in rows]


def _before_after_of_rows(rows: list[MetricRow], seed: int) -> list[tuple[str, object]]:
    """The paired before → after cells as the row-list code computed them (the reference)."""
    out = []
    for source in SOURCES:
        before = {r.id: r for r in rows if r.source == source and r.phase == "before"}
        after = {r.id: r for r in rows if r.source == source and r.phase == "after"}
        pairs = [(before[i], after[i]) for i in before if i in after]
        if pairs:
            out.append((source, paired([b.judges["exact"].cons_sem for b, _ in pairs],
                                       [a.judges["exact"].cons_sem for _, a in pairs], seed),
                        paired([b.cons_lex for b, _ in pairs], [a.cons_lex for _, a in pairs], seed)))
    return out


@settings(max_examples=25, deadline=None)
@given(metric_rows(), st.integers(0, 3))
def test_paired_changes_from_columns_equal_those_of_the_rows(rows, seed):
    changes = before_after_changes(MetricColumns.read(rows), JUDGES, SIMS, "exact", seed=seed)
    assert [(c.source, c.consistency["exact"], c.cons_lex) for c in changes] == \
        _before_after_of_rows(rows, seed)


@settings(max_examples=25, deadline=None)
@given(metric_rows())
def test_signal_groups_take_the_referenced_sets_with_a_defined_score(rows):
    groups = dict(signal_groups(MetricColumns.read(rows), JUDGES, "exact"))
    for source in SOURCES:
        mine = [r for r in rows if r.source == source and r.phase == "before" and r.referenced]
        g = groups.get(("Cons_lex", source, "before"))
        if not mine:
            assert g is None
            continue
        kept = [r for r in mine if r.cons_lex is not None]
        assert g is not None
        assert g.scores.tolist() == [r.cons_lex for r in kept]
        assert g.answers.tolist() == [r.n for r in kept]
        assert g.accurate.tolist() == [r.n_accurate for r in kept]


@st.composite
def uncertainty_rows(draw: st.DrawFn) -> list[UncertaintyRow]:
    rows = []
    for q in range(draw(st.integers(0, 8))):
        for source in SOURCES:
            n = draw(st.integers(0, 4))
            accurate = None if draw(st.booleans()) else draw(st.lists(st.booleans(), min_size=n, max_size=n))
            answers = {"degree_confidence": {j: None if n < 2 or draw(st.booleans()) else
                                             draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
                                             for j in JUDGES}}
            rows.append(UncertaintyRow(id=f"q{q}", source=source, phase="before", accurate=accurate,
                                       sets={"degree_uncertainty": {j: draw(maybe) for j in JUDGES}},
                                       answers=answers))
    return rows


@settings(max_examples=40, deadline=None)
@given(uncertainty_rows())
def test_per_answer_groups_equal_those_of_the_rows(rows):
    columns = UncertaintyColumns.read(rows)
    seen = dict.fromkeys((m, g) for r in rows for m, values in r.sets.items() for g in values)
    assert columns.measures() == list(seen)
    found = dict(answer_groups(columns))
    for source in SOURCES:
        mine = [(k, r) for k, r in enumerate(rows) if r.source == source and r.accurate is not None]
        key = (f"C_Deg ({graph_label('rouge1')}, per answer)", source, "before")
        if not mine:
            assert not any(k[1] == source for k in found)
            continue
        scores, labels, sets = [], [], []
        for k, r in mine:
            values = r.answers["degree_confidence"]["rouge1"]
            if values is not None and r.accurate is not None:
                scores += values
                labels += r.accurate
                sets += [k] * len(values)
        g, owners = found[key]
        assert g.scores.tolist() == scores and g.accurate.tolist() == [int(b) for b in labels]
        assert owners.tolist() == sets


@st.composite
def selection_rows(draw: st.DrawFn) -> list[SelectionScoreRow]:
    rows = []
    methods = draw(st.lists(st.sampled_from(["a2c", "usc", "random", "medoid"]), min_size=1, max_size=4,
                            unique=True))
    for q in range(draw(st.integers(0, 10))):
        referenced = draw(st.booleans())
        for source in SOURCES:
            for method in methods:
                if draw(st.integers(0, 5)) == 0:
                    continue  # a method with no row for this question
                picked = draw(st.booleans())
                rows.append(SelectionScoreRow(
                    id=f"q{q}", source=source, method=method, picked=picked, unparsed=draw(st.booleans()),
                    dont_know=draw(st.booleans()) if method == "a2c" else None, calls=draw(st.integers(0, 3)),
                    accuracy={s: Accuracy(max_true=0.5, diff=0.1, acc=draw(st.sampled_from([0.0, 1.0])))
                              if picked else None for s in SIMS} if referenced else {}))
    return rows


def _selection_of_rows(scores: list[SelectionScoreRow], seed: int) -> list[tuple[object, ...]]:
    """The selection table's numbers as the row-list code computed them (the reference)."""
    methods = list(dict.fromkeys(r.method for r in scores))
    out = []
    for source in SOURCES:
        mine = [r for r in scores if r.source == source]
        by_method = {m: {r.id: r for r in mine if r.method == m} for m in methods}
        referenced = list(dict.fromkeys(r.id for r in mine if r.referenced))
        accs = {(m, s): [a.acc if (r := by_method[m].get(i)) and (a := r.accuracy.get(s)) else None
                         for i in referenced] for m in methods for s in SIMS}
        for method in methods:
            rows = list(by_method[method].values())
            if not rows:
                continue
            picks = [r for r in rows if r.picked]
            idk = all(r.dont_know is not None for r in picks)
            versus = {o: {s: paired(accs[(o, s)], accs[(method, s)], seed) for s in SIMS}
                      for o in ("random", "a2c") if o != method and by_method.get(o)}
            out.append((method, source, len(rows), len(picks), sum(r.unparsed for r in rows),
                        {s: Mean.of(accs[(method, s)]) for s in SIMS},
                        sum(bool(r.dont_know) for r in picks) / len(picks) if picks and idk else None,
                        sum(r.calls for r in rows), versus.get("random", {}), versus.get("a2c", {})))
    return out


@settings(max_examples=40, deadline=None)
@given(selection_rows(), st.integers(0, 3))
def test_selection_table_from_columns_equals_that_of_the_rows(rows, seed):
    found = summarize_selection(SelectionColumns.read(rows), SIMS, {}, seed=seed)
    assert [(s.method, s.source, s.questions, s.picked, s.unparsed, s.accuracy, s.dont_know_share, s.calls,
             s.vs_random, s.vs_a2c) for s in found] == _selection_of_rows(rows, seed)


def test_empty_files_give_empty_columns():
    metrics = MetricColumns.read(())
    assert len(metrics) == 0 and len(metrics.cons_lex) == 0 and metrics.ids == []
    assert before_after_changes(metrics, JUDGES, SIMS, "exact") == []
    assert summarize_selection(SelectionColumns.read(()), SIMS, {}) == []
    assert list(answer_groups(UncertaintyColumns.read(()))) == []


def test_paired_differences_are_computed_size_by_size_and_returned_as_asked(monkeypatch):
    """The summary computes its paired differences in order of how many pairs they resample (so those of
    one size share one seeded draw) and hands them back in the order they were asked for, each what
    `paired` gives on its own; a side may be a list with None or an array with NaN."""
    import a2c.qa.summary as summary

    real, sizes = summary.paired, []

    def counting(before, after, seed):
        sizes.append(sum(None not in (b, a) and not math.isnan(b) and not math.isnan(a)
                         for b, a in zip(before, after, strict=True)))
        return real(before, after, seed)

    monkeypatch.setattr(summary, "paired", counting)
    asks = [([0.25 * k for k in range(n)] + [None] * (9 - n), [0.5] * 8 + [1.0]) for n in (5, 2, 9, 5, 2)]
    batch = summary._PairedBatch(3)
    assert [batch.ask(b, a) for b, a in asks[:4]] == [0, 1, 2, 3]
    as_arrays = np.array([math.nan if v is None else v for v in asks[4][0]])
    assert batch.ask(as_arrays, np.array(asks[4][1])) == 4
    done = batch.run()
    assert sizes == [2, 2, 5, 5, 9]
    assert done == [real(b, a, 3) for b, a in asks]
    assert done[0] != done[1] and done[0] == done[3]


@settings(max_examples=25, deadline=None)
@given(metric_rows(), uncertainty_rows())
def test_signals_are_computed_by_source_and_phase_and_listed_metric_by_metric(rows, uncertainty_rows):
    """The intervals of one (source, phase) resample the same sets, so the groups come a (source, phase)
    at a time (their draws are kept for the last few sizes only); the signal table still lists metric by
    metric, set-level before answer-level, each value the signal of its own groups."""
    metrics, uncertainty = MetricColumns.read(rows), UncertaintyColumns.read(uncertainty_rows)
    where = [(source, phase) for source in SOURCES for phase in PHASES]
    per_set = list(signal_groups(metrics, JUDGES, "exact", uncertainty))
    per_answer = list(answer_groups(uncertainty))
    for keys in ([k for k, _ in per_set], [k for k, _ in per_answer]):
        ranks = [where.index((source, phase)) for _, source, phase in keys]
        assert ranks == sorted(ranks)
    found = consistency_signal(metrics, JUDGES, "exact", uncertainty, seed=1)
    listed = []
    for level, keys in (("set", [k for k, _ in per_set]), ("answer", [k for k, _ in per_answer])):
        names = list(dict.fromkeys(name for name, _, _ in keys))
        listed += sorted(((*k, level) for k in keys),
                         key=lambda k: (names.index(k[0]), where.index((k[1], k[2]))))
    assert list(found) == listed
    expected = {(*k, "set"): signal(g, seed=1) for k, g in per_set}
    expected.update({(*k, "answer"): signal(g, seed=1, clusters=sets) for k, (g, sets) in per_answer})
    assert found == expected
