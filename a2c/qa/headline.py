"""What `a2c run` and `a2c report` end with: the before → after table abridged to a few columns and fitted to
the terminal, and how to read it.

The report's table has a column per similarity, per judge and per computed metric, each cell an arrow and an
interval: well over 200 characters a row, which a terminal wraps into noise. The abridged table keeps the
method, the first similarity's accuracy, the don't-know share of choices, the entropy judge's consistency and
the entropy (the columns the README shows, `benchmarks/quickstart_figures.py` draws them from here); report.md
and table_before_after.csv hold every column. Rows still wider than the terminal are printed as one block per
method, a cell a line.
"""

from __future__ import annotations

import shutil
import sys
import textwrap

from a2c.common.wording import plural
from a2c.qa.correctness.accuracy import accuracy_label
from a2c.qa.dont_know import OF_CHOICES, heading
from a2c.qa.metric_columns import judge_label
from a2c.qa.report import TABLE_BEFORE_AFTER, before_after_table
from a2c.qa.summary import TRUTHFULQA_RULE, QASummary

__all__ = ["abridged_columns", "aligned", "fitted", "headline", "stacked"]


def _starts(name: str, prefix: str) -> bool:
    """Whether `name` is the column `prefix` names (`Emb` is not `Emb-A (..)`; `Entropy (Emb, ..` is)."""
    return name == prefix or any(name.startswith(prefix + end) for end in (" (", ",", ")"))


def abridged_columns(header: list[str], summary: QASummary) -> list[tuple[int, str]]:
    """The abridged columns of a before → after table: the method, the first similarity's accuracy (where
    the run has references), the don't-know share of choices, the entropy judge's consistency and the
    entropy, under labels shorter than the report's (no description in brackets, `Emb Cons_sem`).

    Args:
        header: the table's header (`before_after_table(summary).header`, or that less some columns).
        summary: the run's summary, which names its similarities and entropy judge.

    Returns:
        Per column kept, its index in `header` and its label, in the order above; a column the table lacks
        is left out.
    """
    judge = judge_label(summary.entropy_judge)
    wanted = [("method", "method"),
              *([(accuracy_label(summary.similarities[0]), None)] if summary.similarities else []),
              (heading(OF_CHOICES), None), (judge, f"{judge} Cons_sem"),
              (f"Entropy ({judge}", f"Entropy ({judge})")]
    picks = []
    for prefix, label in wanted:
        found = next((i for i, name in enumerate(header) if _starts(name, prefix)), None)
        if found is not None:
            picks.append((found, label or header[found].split(" (")[0]))
    return picks


def aligned(header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table with padded columns (no rule under the header, as the README's `text` block).

    Args:
        header: the column labels.
        rows: the cells, one list per row, as many as labels.

    Returns:
        The lines of the table.
    """
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    return "\n".join("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
                     for r in (header, *rows))


def stacked(header: list[str], rows: list[list[str]]) -> str:
    """The table as one block per row: its first cell, then every other cell on a line under its label.

    Args:
        header: the column labels.
        rows: the cells, one list per row, as many as labels.

    Returns:
        The blocks, a blank line between them.
    """
    width = max(len(label) for label in header[1:])
    return "\n\n".join("\n".join([row[0], *(f"  {label.ljust(width)}  {cell}"
                                              for label, cell in zip(header[1:], row[1:], strict=True))])
                       for row in rows)


def fitted(header: list[str], rows: list[list[str]], width: int | None) -> str:
    """`aligned` where its lines fit in `width` characters (or no width is given), else `stacked`."""
    table = aligned(header, rows)
    if width is None or max(len(line) for line in table.splitlines()) <= width:
        return table
    return stacked(header, rows)


def _width() -> int | None:
    """The terminal's width where stdout is one (`COLUMNS` overrides it), None for a file or pipe: a log
    does not wrap."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _counted(summary: QASummary) -> str:
    """What an accurate answer is under the run's correctness rule."""
    if summary.accuracy_rule == TRUTHFULQA_RULE:
        return "closer to a correct than to an incorrect reference"
    return f"correct under the {summary.accuracy_rule} rule (the best over the gold answers)"


def headline(summary: QASummary, *, width: int | None = -1) -> str:
    """The abridged before → after table and how to read it.

    Args:
        summary: the run's summary.
        width: the characters a line may take; -1 (the default): the terminal's width where stdout is a
            terminal, no limit otherwise; None: no limit.

    Returns:
        The table (fitted to `width`), then a paragraph wrapped to it.
    """
    width = _width() if width == -1 else width
    table = before_after_table(summary)
    picks = abridged_columns(table.header, summary)
    header = [label for _, label in picks]
    rows = [[row[i] for i, _ in picks] for row in table.rows]
    note = (f"Before → after Ask-to-Choose on {summary.model}, means over "
            f"{plural(summary.counts.questions, 'question')}; in brackets the 95% interval of after − "
            f"before, paired over questions. Accuracy is the share of answers {_counted(summary)}; "
            "consistency is mean Cons_sem (higher = more consistent; entropy: lower). "
            f"Columns abridged: report.md and {TABLE_BEFORE_AFTER.name} in the run folder have every judge "
            "and metric.")
    paragraph = textwrap.fill(note, width=max(width, 40), break_long_words=False, break_on_hyphens=False) \
        if width is not None else note
    return fitted(header, rows, width) + "\n\n" + paragraph
