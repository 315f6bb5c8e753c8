"""The results pages state the present: current figures, each table with the command that reproduces it.

A results page is read to learn what a2c measures today and how to measure it again. Wording about how
the work was organised (rounds, issues, sessions) tells a reader neither, and a table with no command
beside it cannot be checked. Both rules are checked on every page under docs/results/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted((ROOT / "docs" / "results").glob("*.md"))

# "round" as a stretch of work: after a determiner or an ordinal ("the ninth round", "this round's",
# "earlier rounds") or before a number; the verb ("they round") and "round-off", "round trip", "rounding",
# "around" pass. Issues, sessions and work notes in any form, and "#36".
ROUND = (r"\b(?:this|that|the|a|an|each|every|next|last|previous|earlier|later|same|other|another|one|two|"
         r"three|several|many|first|second|third|(?:four|fif|six|seven|eigh|nin|ten|eleven|twelf|\w+teen)th|"
         r"\d+(?:st|nd|rd|th))\s+rounds?\b"
         r"(?![-\s](?:trip|off|robin|number))|\brounds?\s+\d")
WORK_WORDING = re.compile(
    rf"{ROUND}|\bissues?\b|\bsessions?\b|\bwork ?notes?\b|(?<![\w&/])#\d+\b", re.IGNORECASE)
FENCE = re.compile(r"^\s*```")
HEADING = re.compile(r"^#{1,6}\s")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
# What a reader runs: a2c, python, make or a virtual environment's tool, optionally pinned or niced.
COMMAND = re.compile(r"^(?:(?:taskset -c \S+|nice(?: -n \d+)?|/usr/bin/time -v)\s+)*"
                     r"(?:a2c |python |make |\.venv(?:-vllm)?/bin/)")


@dataclass(frozen=True)
class Section:
    """The lines from one heading to the next, with the page line it starts on."""

    line: int
    title: str
    prose: tuple[str, ...]
    code: tuple[str, ...]


def sections(text: str) -> list[Section]:
    """Split a page at its headings; lines inside fenced blocks are code, never headings.

    Args:
        text: a markdown page.

    Returns:
        The page's sections in order, the text before the first heading included.
    """
    found: list[Section] = []
    start, title, prose, code = 1, "", [], []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            code.append(line.strip())
        elif HEADING.match(line):
            found.append(Section(start, title, tuple(prose), tuple(code)))
            start, title, prose, code = number, line.lstrip("#").strip(), [], []
        else:
            prose.append(line)
    found.append(Section(start, title, tuple(prose), tuple(code)))
    return found


def has_table(section: Section) -> bool:
    """A markdown table: a row of cells over a rule of dashes."""
    lines = section.prose
    return any(lines[k].lstrip().startswith("|") and TABLE_RULE.match(lines[k + 1])
               for k in range(len(lines) - 1))


def commands(section: Section) -> list[str]:
    """The section's commands: the lines of its fenced blocks and its inline code that a reader runs.

    A table's own cells do not count: a row naming a command (`a2c --help` timed) does not say how the
    table was measured.
    """
    inline = [m.group(1).strip() for line in section.prose if not line.lstrip().startswith("|")
              for m in INLINE_CODE.finditer(line)]
    return [c for c in [*section.code, *inline] if COMMAND.match(c)]


def work_wording(text: str) -> list[str]:
    """Each line that speaks of rounds, issues, sessions or work notes, with its number.

    Args:
        text: a markdown page.

    Returns:
        "LINE: text" for each offending line.
    """
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
            if WORK_WORDING.search(line)]


def tables_without_command(text: str) -> list[str]:
    """The sections holding a table but no command that reproduces it.

    Args:
        text: a markdown page.

    Returns:
        "LINE: title" for each such section.
    """
    return [f"{s.line}: {s.title or '(top)'}" for s in sections(text) if has_table(s) and not commands(s)]


def test_there_are_results_pages():
    assert len(RESULTS) >= 5, RESULTS


@pytest.mark.parametrize("page", RESULTS, ids=lambda p: p.name)
def test_no_page_speaks_of_rounds_issues_or_sessions(page: Path):
    assert work_wording(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", RESULTS, ids=lambda p: p.name)
def test_every_table_has_its_reproducing_command(page: Path):
    assert tables_without_command(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("line", [
    "## Measured, 2026-11-28 (ninth round)", "the code before this round", "as in earlier rounds",
    "this round's code", "the eighth to tenth rounds", "Round 3 of the work",
    "the issue's goal of 45 minutes", "Issue 36 measured", "those are the next step for #36",
    "this session could not run it", "in earlier sessions", "see the work notes",
])
def test_work_wording_is_caught(line: str):
    assert work_wording(f"# Page\n\n{line}\n") == [f"3: {line}"]


@pytest.mark.parametrize("line", [
    "rounded back to a block boundary", "rounding in the last bits", "around 0.5 s", "a round-off error",
    "they round some values differently", "one round trip per request", "a round number",
    "a table with round brackets",
    "the `#` of a heading", "a colour such as &#35;", "possession",
])
def test_ordinary_words_pass(line: str):
    assert work_wording(f"# Page\n\n{line}\n") == []


TABLE = "| a | b |\n|---|---|\n| 1 | 2 |\n"


def test_a_table_without_a_command_is_caught():
    page = f"# Page\n\nReproduce: `a2c run x.yaml`\n\n## Figures\n\n{TABLE}\nRun it: `--limit 64`.\n"
    assert tables_without_command(page) == ["5: Figures"]


@pytest.mark.parametrize("command", [
    "Reproduce: `.venv/bin/python benchmarks/bench_scale.py --sizes 10000`.",
    "Reproduce: `taskset -c 0 nice -n 5 .venv-vllm/bin/python benchmarks/bench_x.py`.",
    "```bash\n# a comment, not a heading\nmake setup\n```",
    "`a2c compare runs/a runs/b`",
])
def test_a_table_with_a_command_passes(command: str):
    assert tables_without_command(f"# Page\n\n## Figures\n\n{TABLE}\n{command}\n\n## Next\n\nText.\n") == []


def test_a_command_in_a_table_cell_is_not_its_command():
    page = "# Page\n\n## Startup\n\n| command | s |\n|---|---|\n| `a2c --help` | 0.1 |\n"
    assert tables_without_command(page) == ["3: Startup"]


def test_a_command_counts_only_in_its_own_section():
    page = f"# Page\n\n## Figures\n\n{TABLE}\n## How\n\n`a2c run x.yaml`\n"
    assert tables_without_command(page) == ["3: Figures"]


def test_a_table_inside_a_code_block_is_no_table():
    assert tables_without_command(f"# Page\n\n```text\n{TABLE}```\n") == []
