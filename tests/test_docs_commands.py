"""Every code block the docs mark `<!-- runnable -->` runs from a fresh clone: each `.venv/bin/a2c ...` line
goes through `a2c.cli.main` in a folder holding the repository's `examples/` and `experiments/` (and the
local TruthfulQA.csv a user would pass), and must exit 0."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from a2c.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRUTHFULQA = ROOT / "../shared/data/truthfulqa/TruthfulQA.csv"
MARKED = re.compile(r"<!-- runnable -->\n```(?:bash|sh)\n(.*?)```", re.S)
PREFIX = ".venv/bin/a2c "


def runnable_commands() -> list[tuple[str, str]]:
    """(page, command line) for every line of every marked block, comments dropped."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in MARKED.findall(page.read_text(encoding="utf-8")):
            for line in block.splitlines():
                command = line.split("  #", 1)[0].strip()
                if command and not command.startswith("#"):
                    found.append((str(page.relative_to(ROOT)), command))
    return found


COMMANDS = runnable_commands()


def test_the_docs_mark_commands_runnable():
    pages = {page for page, _ in COMMANDS}
    assert {"docs/concepts/metrics.md", "docs/how-to/score.md"} <= pages


@pytest.mark.skipif(not TRUTHFULQA.exists(), reason="TruthfulQA CSV not next to the repository")
@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_a_runnable_command_runs_from_a_fresh_clone(page, command, tmp_path, monkeypatch):
    assert command.startswith(PREFIX), f"{page}: a runnable line is an a2c command: {command}"
    for name in ("examples", "experiments"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "TruthfulQA.csv").symlink_to(TRUTHFULQA.resolve())
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command.removeprefix(PREFIX))
    if argv[0] == "score":  # its default output folder sits beside the input, inside the repository
        argv += ["--out", str(tmp_path / "scores")]
    assert main(argv) == 0, f"{page}: {command}"
