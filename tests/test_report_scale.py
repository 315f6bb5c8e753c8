"""The report's figures stay small on large runs: curves thinned, scatters sampled (and saying so), and
the answer-or-decline section read from the run's columns; plus the two helpers' properties."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.collections import PathCollection

import a2c.qa.report as report
from a2c.display.reporting import sampled, thinned
from a2c.metrics.signal import Groups, rejection_curve
from a2c.qa.summary import summarize_metrics
from a2c.run.config_file import parse_config
from a2c.run.store import RunFolder

CONFIG = parse_config("name: large\njudges: [embedding]\naccuracy:\n  similarities: [rouge1]\n")
QUESTIONS = 300


def _rows(questions: int) -> list[dict]:
    rng = random.Random(3)
    rows = []
    for q in range(questions):
        for source in ("paraphrase", "temperature"):
            for phase in ("before", "after"):
                cons, right = rng.random(), rng.randint(0, 4)
                rows.append({"id": f"q{q}", "source": source, "phase": phase, "n": 4, "n_accurate": right,
                             "cons_lex": round(cons, 1),
                             "judges": {"embedding": {"cons_sem": cons, "entropy": 1 - cons, "clusters": 1,
                                                      "cons_sem_accurate": None}},
                             "accuracy": {"rouge1": {"max_true": right / 4, "diff": 0.0, "acc": right / 4}}})
    return rows


@pytest.fixture
def large_run(tmp_path, monkeypatch):
    """A run of 300 questions, drawn as if 300 were far more than a figure shows: at most 40 points of a
    curve, 25 of a scatter group; every figure the report writes is kept (`figures`)."""
    folder = RunFolder(tmp_path / "run")
    rows = _rows(QUESTIONS)
    folder.write_text("metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    folder.write_text("summary.json", summarize_metrics(folder, CONFIG).model_dump_json())
    monkeypatch.setattr(report, "CURVE_POINTS", 40)
    monkeypatch.setattr(report, "SCATTER_POINTS", 25)
    figures = []
    drawn = report.png_bytes

    def keep(fig):
        figures.append(fig)
        return drawn(fig)

    monkeypatch.setattr(report, "png_bytes", keep)
    return folder, rows, figures


def _figure(figures, words):
    return next(f for f in figures if any(words in ax.get_xlabel() for ax in f.axes))


def test_rejection_curves_are_thinned_points_of_the_full_curve(large_run):
    folder, rows, figures = large_run
    text = report.write_report(folder)
    assert "Cons_lex" in text
    ax = _figure(figures, "share of answers rejected").axes[0]  # paraphrases, before A2C
    mine = [r for r in rows if r["source"] == "paraphrase" and r["phase"] == "before"]
    full_x, full_y = rejection_curve(Groups.of([r["cons_lex"] for r in mine], [r["n"] for r in mine],
                                               [r["n_accurate"] for r in mine]))
    assert len(full_x) == 4 * QUESTIONS  # far more points than the 40 drawn
    lines = {line.get_label(): line for line in ax.get_lines()}
    cons_lex = next(line for label, line in lines.items() if "Cons_lex" in label.split(" = "))
    x, y = (np.asarray(v, dtype=float) for v in cons_lex.get_data())
    assert 2 < len(x) <= 40
    assert (x[0], x[-1]) == (full_x[0], full_x[-1])  # both ends kept
    at = np.searchsorted(full_x, x)
    np.testing.assert_array_equal(full_x[at], x)
    np.testing.assert_array_equal(full_y[at], y)  # points of the curve itself, not a smoothing
    assert all(len(line.get_xdata()) <= 40 for line in ax.get_lines())


def test_a_scatter_larger_than_its_limit_is_sampled_and_says_so(large_run):
    folder, _, figures = large_run
    report.write_report(folder)
    ax = _figure(figures, "consistency (Emb Cons_sem)").axes[0]
    groups = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets()) > 1]
    assert len(groups) == 4 and all(len(c.get_offsets()) == 25 for c in groups)
    assert f"a seeded sample of 25 sets drawn, of up to {QUESTIONS}" in ax.get_title()


def test_a_scatter_within_its_limit_draws_every_set_and_no_note(large_run, monkeypatch):
    folder, _, figures = large_run
    monkeypatch.setattr(report, "SCATTER_POINTS", QUESTIONS)
    report.write_report(folder)
    ax = _figure(figures, "consistency (Emb Cons_sem)").axes[0]
    groups = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets()) > 1]
    assert all(len(c.get_offsets()) == QUESTIONS for c in groups)
    assert "sample" not in ax.get_title()


def test_without_selection_scores_the_decline_section_names_the_missing_file(large_run):
    folder, _, _ = large_run
    text = report.write_report(folder)
    section = text[text.index("## Answer or decline"):]
    for source in ("paraphrase", "temperature"):
        assert f"- {source}: undefined (" in section
    assert "selection_scores.jsonl is missing" in section


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 500), st.integers(2, 50))
def test_thinned_keeps_both_ends_and_at_most_the_points_in_order(n, points):
    x = np.arange(n, dtype=float) / 7
    tx, ty = thinned(x, -x, points)
    assert len(tx) == min(n, points)
    if n:
        assert (tx[0], tx[-1]) == (x[0], x[-1])
    assert np.all(np.diff(tx) > 0)
    np.testing.assert_array_equal(ty, -tx)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.integers(1, 40), st.integers(0, 3))
def test_sampled_is_a_seeded_ordered_subset(n, points, seed):
    rows = np.arange(n) * 3
    drawn = sampled(rows, points, seed=seed)
    assert len(drawn) == min(n, points)
    assert set(drawn.tolist()) <= set(rows.tolist()) and np.all(np.diff(drawn) > 0)
    np.testing.assert_array_equal(drawn, sampled(rows, points, seed=seed))
