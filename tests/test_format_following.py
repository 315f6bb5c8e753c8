"""The rank prompt's format-following (`a2c.qa.format_following`): shares of replies naming an option,
"don't know" or nothing, and picks by position against the candidates' share, on hand-built rows."""

from __future__ import annotations

import pytest

from a2c.qa import format_following as module
from a2c.qa.format_following import format_following, format_following_table, held
from a2c.qa.rows import ChoiceRow, GenerationRow


def _choice(qid: str, options: list[str], option: int | None, source: str = "temperature") -> ChoiceRow:
    text = None if option is None else [*options, "Don't know the correct answer"][option]
    return ChoiceRow(id=qid, source=source, slot=0, shown_question="q?", temperature=0.5, options=options,
                     reply=str(option), option=option, method="unparsed" if option is None else "number",
                     text=text)


def _answers(qid: str, shorts: list[str], source: str = "temperature") -> list[GenerationRow]:
    return [GenerationRow(id=qid, source=source, slot=k, technique=None, temperature=0.5, asked="q?", long=s,
                          short=s) for k, s in enumerate(shorts)]


def test_shares_and_position_bias_against_the_candidates_share():
    # q1: Paris said 3 times of 4 (option 1), Rome once (option 2); q2: three distinct answers
    generations = _answers("q1", ["Paris", "paris.", "Rome", "Paris"]) + _answers("q2", ["a", "b", "c", ""])
    choices = [_choice("q1", ["Paris", "Rome"], 0), _choice("q1", ["Paris", "Rome"], 0),
               _choice("q2", ["a", "b", "c"], 0), _choice("q2", ["a", "b", "c"], 3),  # 3 = don't know
               _choice("q2", ["a", "b", "c"], None), _choice("q3", ["only"], 0)]  # one option: no position
    ff = format_following(choices, held(generations + _answers("q3", ["only"])), "short")["temperature"]
    assert (ff.replies, ff.named_option, ff.named_idk, ff.unparsed, ff.positioned) == (6, 4, 1, 1, 3)
    assert ff.share(ff.named_option) == pytest.approx(4 / 6)
    assert ff.picked == pytest.approx([1.0, 0.0, 0.0])
    # position 1 holds 3/4 of q1's candidates (twice) and 1/3 of q2's non-empty ones (once)
    assert ff.expected == pytest.approx([(0.75 + 0.75 + 1 / 3) / 3, (0.25 + 0.25 + 1 / 3) / 3, (1 / 3) / 3])
    assert ff.bias(0) == pytest.approx(1.0 / ((0.75 + 0.75 + 1 / 3) / 3))
    row = format_following_table([(["m"], ff)], ["model"]).rows[0]
    assert row[:6] == ["m", "6", "0.667", "0.167", "0.167", "3"]
    assert row[6:] == ["1.00 vs 0.61", "0.00 vs 0.28", "0.00 vs 0.11"]


def test_a_source_without_rank_prompts_is_left_out_and_nothing_positioned_is_na():
    choices = [_choice("q1", ["x", "y"], None, source="paraphrase")]
    result = format_following(choices, held(_answers("q1", ["x", "y"], source="paraphrase")), "short")
    assert list(result) == ["paraphrase"]
    ff = result["paraphrase"]
    assert (ff.positioned, ff.picked, ff.bias(0)) == (0, [], None)
    assert format_following_table([(["m"], ff)], ["model"]).rows[0][6:] == ["n/a"] * 3


def test_a_run_summarises_it_and_its_report_shows_it(tmp_path):
    from a2c.qa.rows import CHOICES, GENERATIONS
    from a2c.qa.summary import QASummary
    from a2c.run.store import RunFolder
    from tests.view_runs import qa_run

    folder = RunFolder(qa_run(tmp_path, limit=3))
    summary = QASummary.model_validate_json((folder.path / "summary.json").read_text())
    expected = format_following(folder.read_rows(CHOICES), held(folder.read_rows(GENERATIONS)), "short")
    assert summary.format_following == expected and set(expected) == {"paraphrase", "temperature"}
    report = (folder.path / "report.md").read_text()
    section = report.split("## The rank prompt: does the model follow it?")[1]
    table = format_following_table([([label], expected[s]) for s, label in
                                    [("paraphrase", "in-context paraphrases"),
                                     ("temperature", "cross-temperature")]], ["method"])
    assert table.markdown() in section


def test_candidates_are_read_a_few_questions_at_a_time_and_how_many_changes_nothing(monkeypatch):
    # replies of three questions, interleaved as a run whose rank prompts came back out of order could be
    generations = (_answers("q1", ["Paris", "paris.", "Rome"]) + _answers("q2", ["a", "b", "c"])
                   + _answers("q3", ["x", "y", "y"]))
    choices = [_choice("q1", ["Paris", "Rome"], 0), _choice("q2", ["a", "b", "c"], 2),
               _choice("q1", ["Rome", "Paris"], 1), _choice("q3", ["y", "x"], 0),
               _choice("q2", ["b", "a"], 0), _choice("q3", ["x", "y"], None)]
    whole = format_following(choices, held(generations), "short")
    for at_once in (1, 2):
        asked: list[list[str]] = []

        def generations_of(ids, asked=asked):
            asked.append(list(ids))
            return held(generations)(ids)

        monkeypatch.setattr(module, "_QUESTIONS_AT_ONCE", at_once)
        assert format_following(choices, generations_of, "short") == whole
        assert max(len(ids) for ids in asked) == at_once
        assert sorted({i for ids in asked for i in ids}) == ["q1", "q2", "q3"]
    # five replies named an option; position 1 holds 2/3, 1/3, 1/3, 2/3 and 1/3 of their candidates
    assert whole["temperature"].positioned == 5
    assert whole["temperature"].expected == pytest.approx(
        [(2 / 3 + 1 / 3 + 1 / 3 + 2 / 3 + 1 / 3) / 5, (1 / 3 + 1 / 3 + 2 / 3 + 1 / 3 + 1 / 3) / 5, 1 / 3 / 5])
