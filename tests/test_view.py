"""`a2c view` without a browser: the view data of a scripted QA and classification run against the run's own
files, the report and summary as tables, the page file (inlined, compressed, no network), the CLI."""

from __future__ import annotations

import base64
import json
import re
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.classification.rows import INPUTS, LABELS
from a2c.cli import main
from a2c.display.reporting import Table
from a2c.display.viewdata import Heatmap, Image, TableBlock, Text
from a2c.qa.rows import CHOICES, GENERATIONS, MATRICES, METRICS, PARAPHRASES
from a2c.run.open_run import open_run
from a2c.run.store import MemoryStore, RunFolder
from a2c.view import build_view, run_page
from a2c.view.html import CHUNK, _script_safe
from a2c.view.overview import data_blocks, report_sections, summary_section
from tests.view_runs import classification_run, expected_changed, qa_config, qa_run


@pytest.fixture(scope="module")
def qa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qa_run(tmp_path_factory.mktemp("view-qa"))


@pytest.fixture(scope="module")
def cls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return classification_run(tmp_path_factory.mktemp("view-cls"))


def test_the_question_list_has_one_row_per_question_and_flags_from_the_run_files(qa):
    folder = RunFolder(qa)
    items = run_page(open_run(qa), "t").items
    assert items is not None
    ids = list(dict.fromkeys(r.id for r in folder.read_rows(METRICS)))
    assert [row["id"] for row in items.rows] == ids and len(ids) == 12
    changed = expected_changed(folder)
    assert 0 < len(changed) < len(ids)  # the filter has something to tell apart
    assert {row["id"] for row in items.rows if row["changed"]} == changed
    choices = folder.read_rows(CHOICES)
    assert {row["id"] for row in items.rows if row["unparsed"]} == {c.id for c in choices if not c.parsed}
    assert {row["id"] for row in items.rows if row["idk"]} == {c.id for c in choices if c.dont_know}
    failed = {p.id for p in folder.read_rows(PARAPHRASES) if any(not x.ok for x in p.paraphrases)}
    assert failed and {row["id"] for row in items.rows if row["failed_paraphrase"]} == failed
    metric = next(r for r in folder.read_rows(METRICS) if r.source == "temperature" and r.phase == "after")
    row = next(row for row in items.rows if row["id"] == metric.id)
    assert row["temperature.after.cons_sem.exact"] == metric.judges["exact"].cons_sem
    keys = {c.key for c in items.columns}
    assert all(key in keys for key in row)  # every value the list holds has a column
    assert {c.group for c in items.columns} == {None, "in-context paraphrases", "cross-temperature"}


def test_a_question_page_holds_every_answer_heatmap_and_rank_prompt(qa):
    folder = RunFolder(qa)
    items = run_page(open_run(qa), "t").items
    qid = items.rows[1]["id"]
    page = {s.title: s for s in items.pages[qid]}
    generations = [g for g in folder.read_rows(GENERATIONS) if g.id == qid]
    answers = next(b for b in page["Answers"].blocks if isinstance(b, TableBlock)).table
    assert [r[6] for r in answers.rows] == [g.short for g in generations]
    # per-answer accuracy scored again: its mean over a set is the set's accuracy in metrics.jsonl
    for metric in (r for r in folder.read_rows(METRICS) if r.id == qid and r.phase == "before"):
        accs = [float(re.match(r"acc (\d)", row[7]).group(1)) for row, g in zip(answers.rows, generations,
                                                                                 strict=True)
                if g.source == metric.source]
        assert np.mean(accs) == pytest.approx(metric.accuracy["rouge1"].acc)
    maps = [b for title, s in page.items() if title.startswith("Agreement") for b in s.blocks
            if isinstance(b, Heatmap)]
    assert len(maps) == 2 * 2 * 2  # judges × sources × phases
    before = folder.read_matrices(MATRICES["before"])
    first = maps[0]
    assert np.allclose(first.values, before[("exact", "paraphrase", qid)])
    assert len(first.clusters) == len(first.labels) == len(first.values)
    rank = next(b for b in page["Ask-to-Choose: every rank prompt"].blocks if isinstance(b, TableBlock))
    choices = [c for c in folder.read_rows(CHOICES) if c.id == qid]
    assert [r[4] for r in rank.table.rows] == [c.reply for c in choices]
    assert rank.marks == tuple("failed" if not c.parsed else "idk" if c.dont_know else "" for c in choices)


def test_a_run_whose_data_is_gone_still_opens_without_references(tmp_path):
    data = tmp_path / "qs.jsonl"
    data.write_text('{"id": "a", "question": "Where is Paris?", "best_answer": "France", '
                    '"correct": ["France"], "incorrect": ["Spain"]}\n'
                    '{"id": "b", "question": "Is it green?"}\n')
    run = qa_run(tmp_path, limit=None, dataset={"name": "file", "path": str(data)})
    data.unlink()
    page = run_page(open_run(run), "t")
    assert any("could not be read here" in note and "qs.jsonl" in note for note in page.notes)
    assert [row["id"] for row in page.items.rows] == ["a", "b"]
    assert "not available" in page.items.pages["a"][0].blocks[1].text


def test_the_overview_is_the_report_with_its_tables_and_plots_then_the_summary(qa):
    page = run_page(open_run(qa), "t")
    titles = [s.title for s in page.overview]
    assert titles[:3] == ["a2c report: view-qa", "What this run says", "Before → after Ask-to-Choose"]
    table = next(b for b in page.overview[2].blocks if isinstance(b, TableBlock)).table
    assert table.rows[0][:2] == ["in-context paraphrases", qa_config(qa.parent).generator.model]
    # accuracy vs consistency, metric correlations, accuracy vs rejection, risk vs coverage
    assert len([b for s in page.overview for b in s.blocks if isinstance(b, Image)]) == 4
    summary = page.overview[-1]
    assert summary.folded and summary.title == "Everything in summary.json"
    paths = {b.title for b in summary.blocks if isinstance(b, TableBlock)}
    assert {"summary", "summary.groups", "summary.signal", "summary.counts",
            "summary.counts.choices"} <= paths


def test_report_markdown_becomes_sections():
    store = MemoryStore({"plot.png": b"\x89PNG"})
    text = ("# title\n\nModel `m`, 3 questions.\nSecond line.\n\n## Part\n\n| a | b |\n|---|---|\n"
            "| x \\| y | 1 |\n\n- one point\n\n![plot](plot.png)\n![gone](missing.png)\n")
    sections = report_sections(text, store)
    assert [s.title for s in sections] == ["title", "Part"]
    assert sections[0].blocks == (Text("Model `m`, 3 questions. Second line.", markup=True),)
    table, point, image = sections[1].blocks
    assert table == TableBlock(Table(["a", "b"], [["x | y", "1"]]))
    assert point == Text("• one point", markup=True) and image == Image("plot", b"\x89PNG")


def test_a_summary_field_no_code_knows_still_becomes_a_table():
    data = {"name": "x", "selection": [{"method": "majority", "accuracy": 0.5, "by": {"judge": "exact"}},
                                       {"method": "a2c", "accuracy": 0.75, "by": {"judge": "exact"}}],
            "counts": {"questions": 3, "choices": {"paraphrase": {"rank_prompts": 4}}}}
    blocks = {b.title: b.table for b in data_blocks("summary", data)}
    assert blocks["summary"] == Table(["field", "value"], [["name", "x"]])
    assert blocks["summary.selection"] == Table(["method", "accuracy", "by.judge"],
                                                [["majority", "0.500", "exact"], ["a2c", "0.750", "exact"]])
    assert blocks["summary.counts"].rows == [["questions", "3"]]
    assert blocks["summary.counts.choices"] == Table(["key", "rank_prompts"], [["paraphrase", "4"]])


def test_the_classification_view_lists_items_and_their_inputs(cls):
    folder = RunFolder(cls)
    page = run_page(open_run(cls), "t")
    inputs, labels = folder.read_rows(INPUTS), {r.key: r for r in folder.read_rows(LABELS)}
    items = page.items
    assert items.noun == "item"
    assert [r["id"] for r in items.rows] == list(dict.fromkeys(i.item for i in inputs))
    unparsed = {i.item for i in inputs if labels[i.key].label is None}
    assert len(unparsed) > 0 and {r["id"] for r in items.rows if r["unparsed"]} == unparsed
    first = items.rows[0]["id"]
    table = next(b for s in items.pages[first] for b in s.blocks if isinstance(b, TableBlock)
                 and b.table.header[0] == "input")
    assert len(table.table.rows) == sum(i.item == first for i in inputs)
    assert any(s.title.startswith("Paraphrastic") or "paper 003" in s.title for s in page.overview)
    assert isinstance(summary_section(open_run(cls).summary, "summary.json").blocks[0], TableBlock)


def _pages(html: str) -> dict[str, list]:
    pages = {}
    pattern = r'<script type="application/octet-stream" id="a2c-pages-0-\d+">([^<]*)</script>'
    for chunk in re.findall(pattern, html):
        pages.update(json.loads(zlib.decompress(base64.b64decode(chunk))))
    return pages


def test_the_page_file_is_self_contained_and_pages_are_compressed_in_chunks(qa):
    html = build_view([qa])
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing loaded from anywhere
    assert "default-src 'none'" in html
    data = json.loads(re.search(r'<script id="a2c-data" type="application/json">(.*?)</script>', html,
                                re.S).group(1))
    assert len(data["runs"][0]["rows"]) == 12 and data["comparison"] is None
    pages = _pages(html)
    assert len(re.findall(r'id="a2c-pages-0-', html)) == -(-12 // CHUNK)
    assert set(pages) == {row["id"] for row in data["runs"][0]["rows"]}


@given(st.text())
def test_inlined_json_cannot_close_its_script_element(text):
    safe = _script_safe(json.dumps({"t": text + "</script><!--"}))
    assert "<" not in safe and json.loads(safe) == {"t": text + "</script><!--"}


def test_cli_view_and_report_write_the_html(qa, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(qa, run)
    assert main(["view", str(run)]) == 0
    assert capsys.readouterr().out.strip() == f"written: {run / 'report.html'}"
    assert (run / "report.html").is_file()
    (run / "report.html").unlink()
    capsys.readouterr()
    assert main(["report", str(run), "--no-rescore", "--no-html"]) == 0
    assert not (run / "report.html").exists()
    printed = capsys.readouterr().out
    # the result table and where the report went, not the whole report.md
    assert printed.startswith("| method ") and printed.rstrip().endswith(f"written: {run / 'report.md'}")
    assert len(printed) < len((run / "report.md").read_text()) / 2
    assert main(["report", str(run), "--no-rescore"]) == 0
    assert (run / "report.html").is_file()
    (tmp_path / "out").mkdir()
    assert main(["view", str(run), "-o", str(tmp_path / "out")]) == 0  # a folder: report.html in it
    assert (tmp_path / "out" / "report.html").is_file()


def test_cli_view_refuses_a_folder_without_a_finished_run_in_one_line(tmp_path, capsys):
    assert main(["view", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"a2c: error: run folder not found: {tmp_path / 'nothing'}"]
    config = qa_config(tmp_path)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.yaml").write_text(f"name: {config.name}\n")
    assert main(["view", str(tmp_path / "half")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"a2c: error: {tmp_path / 'half'}: the run has not finished (no summary.json)"
    assert err[1].startswith("hint: finish it: a2c run")


def test_a_run_without_ask_to_choose_has_no_after_columns_or_rank_prompts(tmp_path):
    run = qa_run(tmp_path, limit=2, a2c={"enabled": False})
    items = run_page(open_run(run), "t").items
    keys = {c.key for c in items.columns}
    assert "changed" not in keys and not any(".after." in key for key in keys)
    assert "paraphrase.before.cons_sem.exact" in keys
    titles = [s.title for s in items.pages[items.rows[0]["id"]]]
    assert titles == ["Question quickstart-0", "Paraphrases", "Answers", "Agreement and clusters, before "
                      "Ask-to-Choose", "Metrics before → after Ask-to-Choose"]


def test_a2cs_answer_follows_the_runs_vote_as_the_wrapper_takes_it(tmp_path):
    """Under `vote: debiased` the list's "A2C's answer" is the wrapper's answer to the same replies (the
    question's own prior divided out), and the rank-prompt summary names the vote; on this run that moves
    an answer away from the plain majority (seed 1: one of the 12)."""
    from a2c.qa.choice import summarize
    from a2c.qa.rank import majority_vote

    run = qa_run(tmp_path, seed=1, ask_to_choose={"vote": "debiased", "option_order": "shuffled"})
    items = run_page(open_run(run), "t").items
    assert items is not None
    choices: dict[str, list] = {}
    for c in RunFolder(run).read_rows(CHOICES):
        choices.setdefault(c.id, []).append(c)
    shown = {row["id"]: row["a2c_answer"] for row in items.rows}
    wrapper = {q: summarize("", [], rows, vote="debiased").answer for q, rows in choices.items()}
    assert shown == wrapper
    plain = {q: majority_vote([c.text for c in rows if c.text is not None])[0] for q, rows in choices.items()}
    assert any(plain[q] != wrapper[q] for q in choices)
    qid = next(iter(choices))
    summary = next(b for s in items.pages[qid] for b in s.blocks
                   if isinstance(b, Text) and "A2C's answer" in b.text)
    assert "the debiased vote over" in summary.text
