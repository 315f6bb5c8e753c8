"""What `a2c run` and `a2c report` end with: the before → after table abridged to the README's columns,
laid out to fit the terminal, and where every column is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from a2c.cli import main
from a2c.qa.dont_know import OF_CHOICES, heading
from a2c.qa.headline import abridged_columns, fitted, headline
from a2c.qa.report import before_after_table
from a2c.qa.summary import read_summary
from a2c.run.store import RunFolder
from a2c.system.progress import QUIET_ENV
from tests.terminal import on_a_terminal, screen

CONFIG = ("name: one\nlimit: 1\njudges: [exact]\naccuracy: {similarities: [rouge1]}\n"
          "generator: {backend: scripted, model: 'scripted:1|2|Which one?', cache: null}\n")
LABELS = ["method", "R1-A", heading(OF_CHOICES), "Exact Cons_sem", "Entropy (Exact)"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in QUIET_ENV and k != "COLUMNS"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished one-question run on the scripted model."""
    root = tmp_path_factory.mktemp("headline")
    (root / "one.yaml").write_text(CONFIG, encoding="utf-8")
    command = [sys.executable, "-m", "a2c", "run", "one.yaml", "--output", "run", "--no-progress"]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=1200, env=_env())
    assert result.returncode == 0, result.stderr[-3000:]
    return root / "run"


def test_a_log_gets_the_abridged_table_whole_and_where_the_rest_is(run_dir, capsys):
    assert main(["report", str(run_dir), "--no-rescore", "--no-html"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == LABELS
    assert lines[1].startswith("| in-context paraphrases ") and lines[2].startswith("| cross-temperature ")
    assert "means over 1 question;" in out  # one question, not "1 questions"
    assert "report.md and table_before_after.csv in the run folder have every judge" in out
    full = before_after_table(read_summary(RunFolder(run_dir), "summary.json", hint=""))
    widest = max(len(line) for line in full.markdown().splitlines())
    assert max(len(line) for line in lines[:3]) < widest  # narrower than the report's table


@pytest.mark.parametrize("columns", [80, 200])
def test_on_a_terminal_no_line_is_wider_than_it(run_dir, columns):
    command = [sys.executable, "-m", "a2c", "report", str(run_dir), "--no-rescore", "--no-html"]
    shown = [line for line in screen(on_a_terminal(command, run_dir, _env(), columns)) if line]
    assert max(len(line) for line in shown) <= columns, shown
    if columns == 80:  # the table is wider: one block per method, a cell a line under its label
        at = shown.index("in-context paraphrases")
        labels = [line.split()[0] for line in shown[at + 1:at + 5]]
        assert labels == ["R1-A", "Don't-know", "Exact", "Entropy"], shown
        assert "cross-temperature" in shown
    else:
        assert shown[0].startswith("| method ") and heading(OF_CHOICES) in shown[0]


def test_columns_a_table_lacks_are_left_out(run_dir):
    summary = read_summary(RunFolder(run_dir), "summary.json", hint="")
    header = before_after_table(summary).header
    picks = abridged_columns(header, summary)
    assert [label for _, label in picks] == LABELS
    assert [header[i] for i, _ in picks][2] == f"{heading(OF_CHOICES)} (A2C)"  # found by the report's name
    unreferenced = [name for name in header if name != "R1-A"]  # a run without references
    assert [label for _, label in abridged_columns(unreferenced, summary)] == [LABELS[0], *LABELS[2:]]


def test_a_narrow_width_stacks_the_rows_and_none_keeps_the_table():
    header, rows = ["method", "A", "B"], [["first", "0.1 → 0.2", "x"], ["second", "0.3", "y"]]
    assert fitted(header, rows, None) == fitted(header, rows, 80) == (
        "| method | A         | B |\n| first  | 0.1 → 0.2 | x |\n| second | 0.3       | y |")
    assert fitted(header, rows, 20) == "first\n  A  0.1 → 0.2\n  B  x\n\nsecond\n  A  0.3\n  B  y"


def test_the_paragraph_is_wrapped_to_the_width(run_dir):
    text = headline(read_summary(RunFolder(run_dir), "summary.json", hint=""), width=60)
    assert all(len(line) <= 60 for line in text.splitlines()), text
