"""`a2c compare`: Table 5 across two scripted QA runs (seeds 0 and 1), values recomputed by hand from each
run's metrics.jsonl; mismatched question sets refused in one line or intersected; labels; the CLI files."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from a2c.cli import main
from a2c.metrics.bootstrap import paired_difference_ci
from a2c.qa.compare import RESAMPLES, SEED
from a2c.qa.rows import METRICS
from a2c.run.store import RunFolder
from a2c.view import CompareError, compare_runs
from tests.view_runs import QA_SCRIPT, classification_run, qa_run

METHODS = {"paraphrase": "in-context paraphrases", "temperature": "cross-temperature"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return (qa_run(tmp_path_factory.mktemp("seed0"), limit=5, seed=0),
            qa_run(tmp_path_factory.mktemp("seed1"), limit=5, seed=1))


def _by_hand(run: Path, source: str, value) -> tuple[float, float, list, list]:
    rows = RunFolder(run).read_rows(METRICS)
    ids = list(dict.fromkeys(r.id for r in rows))
    at = {(r.id, r.phase): r for r in rows if r.source == source}
    before, after = [value(at[(q, "before")]) for q in ids], [value(at[(q, "after")]) for q in ids]
    pairs = [(b, a) for b, a in zip(before, after, strict=True) if b is not None and a is not None]
    return sum(b for b, _ in pairs) / len(pairs), sum(a for _, a in pairs) / len(pairs), before, after


def test_two_runs_give_method_by_run_rows_with_paired_intervals(runs):
    first, second = runs
    comparison = compare_runs([first, second], labels=["seed 0", "seed 1"])
    table = comparison.table()
    assert table.header == ["method", "run", "R1-A", "Exact Cons_sem", "R1-C Cons_sem",
                            "Don't-know share of picks (A2C)", "A2C calls / question"]
    assert [row[:2] for row in table.rows] == [
        ["in-context paraphrases", "seed 0"], ["in-context paraphrases", "seed 1"],
        ["cross-temperature", "seed 0"], ["cross-temperature", "seed 1"]]
    for (source, run), label in zip([("paraphrase", first), ("paraphrase", second), ("temperature", first),
                                     ("temperature", second)], ["seed 0", "seed 1"] * 2, strict=True):
        before, after, b_list, a_list = _by_hand(run, source, lambda r: r.judges["exact"].cons_sem)
        cell = comparison.cells[(source, label, "cons.exact")]
        assert cell.before == pytest.approx(before) and cell.after == pytest.approx(after)
        expected = paired_difference_ci(b_list, a_list, resamples=RESAMPLES, seed=SEED)
        assert (cell.difference.low, cell.difference.high) == (expected.low, expected.high)
        assert cell.difference.mean_difference == pytest.approx(after - before)
        d = cell.difference
        row = next(r for r in table.rows if r[:2] == [METHODS[source], label])
        assert row[3] == (f"{before:.3f} → {after:.3f} ({d.mean_difference:+.3f} [{d.low:+.3f}, "
                          f"{d.high:+.3f}]{'*' if d.excludes_zero else ''})")
    assert comparison.scope() == "All 2 runs hold the same 5 questions."


def test_a2c_columns_and_format_following_come_from_the_runs_rows(runs):
    from a2c.qa.format_following import format_following, held
    from a2c.qa.rows import CHOICES, GENERATIONS, SELECTIONS

    comparison = compare_runs(list(runs), labels=["seed 0", "seed 1"])
    folder = RunFolder(runs[1])
    picks = [p for p in folder.read_rows(SELECTIONS) if p.method == "a2c" and p.source == "temperature"]
    picked = [p for p in picks if p.text is not None]
    row = next(r for r in comparison.table().rows if r[:2] == ["cross-temperature", "seed 1"])
    assert row[-2:] == [f"{sum(bool(p.dont_know) for p in picked) / len(picked):.3f}",
                        f"{sum(p.calls for p in picks) / len(picks):.2f}"]
    expected = format_following(folder.read_rows(CHOICES), held(folder.read_rows(GENERATIONS)), "short")
    assert comparison.runs[1].following == expected
    following = comparison.following_table()
    assert [r[:2] for r in following.rows] == [[METHODS[s], label] for s in METHODS for label in
                                               ["seed 0", "seed 1"]]


def test_default_labels_are_the_model_told_apart_by_folder(runs):
    comparison = compare_runs(list(runs))
    model = " ".join(QA_SCRIPT.split())
    assert [r.label for r in comparison.runs] == [f"{model} ({runs[0]})", f"{model} ({runs[1]})"]


def test_cli_writes_markdown_csv_and_plot(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", str(runs[0]), str(runs[1]), "-o", str(out), "--label", "a", "--label", "b"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# a2c compare") and f"written: {out / 'compare.png'}" in printed
    assert (out / "compare.png").read_bytes()[:4] == b"\x89PNG"
    markdown = (out / "compare.md").read_text()
    assert markdown.count("| in-context paraphrases |") == 4  # Table 5's rows, then format-following's
    assert "## The rank prompt: does each model follow it?" in markdown
    lines = list(csv.DictReader(io.StringIO((out / "compare.csv").read_text())))
    assert len(lines) == 2 * 2 * 3  # methods × runs × metrics
    line = next(x for x in lines if x["run"] == "b" and x["metric"] == "Exact Cons_sem"
                and x["method"] == "temperature")
    _, _, before, after = _by_hand(runs[1], "temperature", lambda r: r.judges["exact"].cons_sem)
    expected = paired_difference_ci(before, after, resamples=RESAMPLES, seed=SEED)
    assert float(line["ci_low"]) == expected.low and int(line["questions"]) == expected.n


def test_other_question_sets_are_refused_in_one_line_or_intersected(runs, tmp_path, capsys):
    fewer = qa_run(tmp_path, limit=3)
    assert main(["compare", str(runs[0]), str(fewer), "-o", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"a2c: error: {runs[0]} and {fewer} hold different question sets (5 and 3 questions, 3 shared): "
        "rerun with --intersect to compare the shared ones"]
    assert not (tmp_path / "x").exists()
    comparison = compare_runs([runs[0], fewer], intersect=True)
    assert len(comparison.questions) == 3
    assert comparison.scope().startswith("Compared on the 3 questions every run holds (--intersect")
    _, _, before, after = _by_hand(fewer, "paraphrase", lambda r: r.judges["rouge1"].cons_sem)
    cell = comparison.cells[("paraphrase", comparison.runs[1].label, "cons.rouge1")]
    assert cell.difference == paired_difference_ci(before, after, resamples=RESAMPLES, seed=SEED)


def test_bad_labels_and_classification_runs_are_refused(runs, tmp_path, capsys):
    with pytest.raises(CompareError, match="1 --label for 2 runs"):
        compare_runs(list(runs), labels=["only one"])
    with pytest.raises(CompareError, match="names a run twice"):
        compare_runs(list(runs), labels=["x", "x"])
    cls = classification_run(tmp_path)
    with pytest.raises(CompareError, match=r"is a classification run: task 'classification' does not "
                       r"support a2c compare \(tasks that do: qa\)"):
        compare_runs([runs[0], cls])
    # the task declares no comparison (`TaskSpec.compare`): the command refuses it in one line
    assert main(["compare", str(cls), "-o", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"a2c: error: {cls} is a classification run: task 'classification' does not support a2c compare "
        "(tasks that do: qa)"]
    assert not (tmp_path / "x").exists()


def test_runs_that_share_no_question_are_refused_without_suggesting_intersect(runs, tmp_path, capsys):
    own = tmp_path / "own.jsonl"
    own.write_text('{"id": "own-1", "question": "What colour is a ripe lemon?"}\n'
                   '{"id": "own-2", "question": "How many wheels does a bicycle have?"}\n', encoding="utf-8")
    other = qa_run(tmp_path, dataset={"name": "file", "path": str(own)})
    for flags in ([], ["--intersect"]):
        assert main(["compare", str(runs[0]), str(other), "-o", str(tmp_path / "x"), *flags]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"a2c: error: {runs[0]} and {other} share no question (same id and text; 5 and 2 questions), so "
            "there is nothing to compare"]


def _markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table of a page, as rows keyed by its header."""
    tables, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])])
        elif block:
            header, rows = block[0], [r for r in block[1:] if not set("".join(r)) <= set("-: ")]
            tables.append([dict(zip(header, r, strict=True)) for r in rows])
            block = []
    return tables


def test_the_report_and_compare_give_a_dont_know_figure_one_name_and_one_value(tmp_path):
    """On one run the three don't-know figures differ; each table names its figure by its own name, the
    report and `a2c compare` show the same value under the same name, and no page says "don't-know share"
    without saying of what."""
    from a2c.qa.dont_know import OF_CHOICES, OF_PICKS, OF_RANK_REPLIES, heading

    run = qa_run(tmp_path, limit=12)  # its paraphrase rank replies: some unparsed, some "don't know"
    report = (run / "report.md").read_text(encoding="utf-8")
    comparison = compare_runs([run])
    compare = comparison.markdown()
    tables = _markdown_tables(report)
    choices = next(t for t in tables if t and f"{heading(OF_CHOICES)} (A2C)" in t[0])
    picks = next(t for t in tables if t and heading(OF_PICKS) in t[0])
    replies = next(t for t in tables if t and "named don't know" in t[0])
    compared = next(t for t in _markdown_tables(compare) if t and f"{heading(OF_PICKS)} (A2C)" in t[0])
    compared_replies = next(t for t in _markdown_tables(compare) if t and "named don't know" in t[0])
    for label in METHODS.values():
        a2c = next(r for r in picks if r["method"] == label and r["selection"] == "A2C")
        mine = next(r for r in compared if r["method"] == label)
        assert a2c[heading(OF_PICKS)] == mine[f"{heading(OF_PICKS)} (A2C)"] != "n/a"
        assert next(r for r in replies if r["method"] == label)["named don't know"] == \
            next(r for r in compared_replies if r["method"] == label)["named don't know"]
    paraphrase = {name: float(value) for name, value in (
        ("choices", next(r for r in choices if r["method"] == METHODS["paraphrase"])[f"{heading(OF_CHOICES)} "
                                                                                      "(A2C)"]),
        ("replies", next(r for r in replies if r["method"] == METHODS["paraphrase"])["named don't know"]),
        ("picks", next(r for r in picks if r["method"] == METHODS["paraphrase"]
                       and r["selection"] == "A2C")[heading(OF_PICKS)]))}
    assert len(set(paraphrase.values())) == 3, paraphrase  # three figures, so three names
    assert len({OF_CHOICES, OF_RANK_REPLIES, OF_PICKS}) == 3
    for page in (report, compare):
        assert not re.search(r"don't-know share(?! of (choices|rank replies|picks))", page, re.IGNORECASE)
