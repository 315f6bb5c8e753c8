"""A view of a very large run lists an evenly spaced sample of its questions and says so (issue 36)."""

from __future__ import annotations

import pytest

from a2c.qa import view as qa_view
from a2c.qa.rows import METRICS
from a2c.run.open_run import open_run
from a2c.run.store import RunFolder
from a2c.view import run_page
from tests.view_runs import qa_run


def test_the_sample_is_evenly_spaced_and_keeps_small_runs_whole():
    ids = [f"q{k}" for k in range(10)]
    assert qa_view.shown_questions(ids, most=10) == ids
    assert qa_view.shown_questions(ids, most=4) == ["q0", "q2", "q5", "q7"]
    assert qa_view.shown_questions([], most=4) == []


def test_a_run_of_more_questions_than_a_view_shows_is_sampled_and_says_so(tmp_path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    run = qa_run(tmp_path)
    every = list(dict.fromkeys(r.id for r in RunFolder(run).read_rows(METRICS)))
    monkeypatch.setattr(qa_view, "MAX_QUESTIONS", 5)
    items = run_page(open_run(run), "t").items
    assert items is not None
    shown = [row["id"] for row in items.rows]
    assert shown == [every[k * len(every) // 5] for k in range(5)]
    assert set(items.pages) == set(shown)  # a page for each question listed, none for the others
    assert any(f"has {len(every)} questions" in note and "sample of 5" in note for note in items.notes)
    # each listed question keeps its own answers and matrices
    page = items.pages[shown[1]]
    assert page is not None
