"""`a2c compare`'s order-sensitivity table: two scripted runs of one generation (one request cache), rank
prompts in `fixed` and `shuffled` order, the share of differing picks counted by hand from their
`selections.jsonl`; runs of other candidates or other rank settings get one line and no table; the share
function's properties on synthetic picks.

The scripted backend answers by a digest of the prompt, so a prompt that lists its options in another
order gets another reply, and some picks move.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.cli import main
from a2c.qa.compare import COMPARE_ORDER_CSV
from a2c.qa.order_sensitivity import DONT_KNOW, differing_share, pick_key
from a2c.qa.rows import SelectionRow
from a2c.view import compare_runs
from tests.view_runs import QA_SCRIPT, qa_run

METHODS = {"paraphrase": "in-context paraphrases", "temperature": "cross-temperature"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("order")  # one request cache: the generation is served, not redone
    made = {order: qa_run(root, limit=12, output=str(root / order), ask_to_choose={"option_order": order})
            for order in ("fixed", "shuffled")}
    other = {"backend": "scripted", "model": QA_SCRIPT.replace("Rome", "Oslo"),
             "cache": str(root / "cache.sqlite")}
    made["other model"] = qa_run(root, limit=12, output=str(root / "other"), generator=other)
    made["hot"] = qa_run(root, limit=12, output=str(root / "hot"), ask_to_choose={"rank_temperature": 0.5})
    return made


def _by_hand(first: Path, second: Path, source: str) -> tuple[int, int, int]:
    """(compared, no pick, differing) straight from both runs' selections.jsonl: a pick is its candidate
    index or "don't know", none where `text` is null."""
    def picks(run: Path) -> dict[str, tuple[bool, int | None] | None]:
        rows = [json.loads(line) for line in (run / "selections.jsonl").read_text().splitlines()]
        return {r["id"]: None if r["text"] is None else (r["dont_know"], r["candidate"])
                for r in rows if r["method"] == "a2c" and r["source"] == source}

    a, b = picks(first), picks(second)
    assert a.keys() == b.keys() and len(a) == 12
    both = [q for q in a if a[q] is not None and b[q] is not None]
    return len(both), len(a) - len(both), sum(a[q] != b[q] for q in both)


def test_the_two_runs_share_their_candidates_and_not_their_prompts(runs):
    assert (runs["fixed"] / "generations.jsonl").read_bytes() == (runs["shuffled"] / "generations.jsonl"
                                                                  ).read_bytes()
    assert (runs["fixed"] / "choices.jsonl").read_bytes() != (runs["shuffled"] / "choices.jsonl").read_bytes()


def test_fixed_against_shuffled_gives_the_hand_counted_share_inside_its_interval(runs):
    comparison = compare_runs([runs["fixed"], runs["shuffled"]], labels=["fixed", "shuffled"])
    order = comparison.order
    assert order.reason is None
    table = order.table()
    assert table is not None
    assert [row[:5] for row in table.rows] == [[METHODS[s], "fixed", "shuffled", "fixed, plain",
                                                "shuffled, plain"] for s in METHODS]
    moved = 0
    for pair, row in zip(order.pairs, table.rows, strict=True):
        compared, left_out, differing = _by_hand(runs["fixed"], runs["shuffled"], pair.source)
        share = pair.share
        assert (share.compared, share.left_out, share.differing) == (compared, left_out, differing)
        assert share.share == pytest.approx(differing / compared)
        assert share.low is not None and share.high is not None
        assert share.low <= share.share <= share.high
        if 0 < differing < compared:
            assert share.low < share.high
        assert row[5:8] == [str(compared), f"{differing / compared:.3f} [{share.low:.3f}, {share.high:.3f}]",
                            str(left_out)]
        moved += differing
        # each run's position-1 figures are its format-following table's
        for run, cell in ((comparison.runs[0], row[8]), (comparison.runs[1], row[9])):
            ff = run.following[pair.source]
            assert cell == f"{ff.picked[0]:.2f} vs {ff.expected[0]:.2f}"
    assert moved > 0  # the shuffled order moved some picks: a share of 0 everywhere would test little


def test_the_cli_writes_the_table_to_markdown_and_csv(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", str(runs["fixed"]), str(runs["shuffled"]), "-o", str(out), "--label", "fixed",
                 "--label", "shuffled"]) == 0
    printed = capsys.readouterr().out
    assert "## Order sensitivity: does the pick follow the option order?" in printed
    assert f"written: {out / COMPARE_ORDER_CSV.name}" in printed
    lines = list(csv.DictReader(io.StringIO((out / COMPARE_ORDER_CSV.name).read_text())))
    assert [(x["method"], x["option_order_a"], x["option_order_b"]) for x in lines] == [
        (s, "fixed", "shuffled") for s in METHODS]
    for line in lines:
        compared, left_out, differing = _by_hand(runs["fixed"], runs["shuffled"], line["method"])
        assert (int(line["questions"]), int(line["no_pick"]), int(line["differing"])) == (
            compared, left_out, differing)
        assert float(line["ci_low"]) <= float(line["share"]) == differing / compared <= float(line["ci_high"])


def test_runs_of_other_candidates_get_one_line_and_no_table(runs, tmp_path, capsys):
    comparison = compare_runs([runs["fixed"], runs["other model"]], labels=["fixed", "other"])
    assert comparison.order.table() is None and not comparison.order.pairs
    reason = comparison.order.reason
    assert reason is not None and "\n" not in reason
    assert reason.startswith("No order-sensitivity table: fixed and other do not share their candidates (")
    markdown = comparison.markdown()
    assert reason in markdown and "picks that differ" not in markdown
    out = tmp_path / "cmp"
    assert main(["compare", str(runs["fixed"]), str(runs["other model"]), "-o", str(out)]) == 0
    capsys.readouterr()
    assert (out / COMPARE_ORDER_CSV.name).read_text().strip().count("\n") == 0  # its header only


def test_runs_of_other_rank_settings_get_one_line_naming_the_setting(runs):
    assert (runs["fixed"] / "generations.jsonl").read_bytes() == (runs["hot"] / "generations.jsonl"
                                                                  ).read_bytes()
    order = compare_runs([runs["fixed"], runs["hot"]], labels=["fixed", "hot"]).order
    assert order.table() is None
    assert order.reason == ("No order-sensitivity table: fixed and hot share their candidates but their rank "
                            "prompts differ in ask_to_choose.rank_temperature (0.0 and 0.5), not only in "
                            "option_order or vote.")


def test_a_mixed_set_keeps_the_pairs_that_qualify(runs):
    order = compare_runs([runs["fixed"], runs["shuffled"], runs["other model"]],
                         labels=["fixed", "shuffled", "other"]).order
    assert {(p.first.label, p.second.label) for p in order.pairs} == {("fixed", "shuffled")}
    assert order.reason is not None and order.reason.startswith("Left out of the table: 2 of 3 pairs of runs")


def test_one_run_says_nothing_about_order(runs):
    comparison = compare_runs([runs["fixed"]])
    assert not comparison.order.shown and "Order sensitivity" not in comparison.markdown()


# -- the share itself ------------------------------------------------------------------------------------

def _row(text: str | None, dont_know: bool = False) -> SelectionRow:
    return SelectionRow(id="q", source="paraphrase", method="a2c", text=text, candidate=None,
                        dont_know=dont_know)


def test_dont_know_is_a_pick_and_no_pick_is_left_out():
    assert pick_key(_row("I don't know", dont_know=True)) == DONT_KNOW
    assert pick_key(_row("  Paris. ")) == pick_key(_row("paris")) != DONT_KNOW
    assert pick_key(_row(None)) is None
    share = differing_share([DONT_KNOW, DONT_KNOW, "paris", None, "rome"],
                            [DONT_KNOW, "paris", "paris", "rome", None], resamples=200)
    assert (share.compared, share.left_out, share.differing) == (3, 2, 1)


picks = st.lists(st.one_of(st.none(), st.sampled_from(["paris", "rome", "oslo", DONT_KNOW])), max_size=30)


@given(picks)
def test_identical_picks_never_differ(first):
    share = differing_share(first, list(first), resamples=50)
    assert share.differing == 0 and share.compared + share.left_out == len(first)
    if share.compared:
        assert share.share == 0
    if share.compared >= 2:
        assert (share.low, share.high) == (0.0, 0.0)


@given(st.lists(st.integers(0, 5), max_size=30))
def test_picks_that_all_differ_give_one(values):
    share = differing_share([f"a{v}" for v in values], [f"b{v}" for v in values], resamples=50)
    assert share.differing == share.compared == len(values)
    if values:
        assert share.share == 1
    if len(values) >= 2:
        assert (share.low, share.high) == (1.0, 1.0)


@given(st.data())
def test_the_share_is_symmetric_and_inside_its_interval(data):
    first = data.draw(picks)
    second = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(["paris", "rome", DONT_KNOW])),
                                min_size=len(first), max_size=len(first)))
    ab, ba = differing_share(first, second, resamples=50), differing_share(second, first, resamples=50)
    assert ab == ba
    expected = [a != b for a, b in zip(first, second, strict=True) if a is not None and b is not None]
    assert (ab.compared, ab.differing) == (len(expected), sum(expected))
    if ab.low is not None and ab.high is not None and ab.share is not None:
        assert ab.low <= ab.share <= ab.high


def test_picks_of_unequal_length_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        differing_share(["a"], ["a", "b"])
