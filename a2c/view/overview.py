"""The overview of a run, for any task: its `report.md` as sections (the tables and plots in the order and
layout the task's report draws them), then every field of its typed summary as tables.

Both follow what the files hold, so a table a task adds to its report, or a field it adds to its summary,
shows up here without this module changing.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from a2c.display.reporting import Table
from a2c.display.viewdata import Block, Image, Section, TableBlock, Text, cell_text, flatten
from a2c.run.store import Store

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)$")


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner)]


def report_sections(markdown: str, store: Store) -> list[Section]:
    """A report's markdown as sections: `##`/`###` headings open one, pipe tables become tables, an image
    of a file in the run folder is inlined, other lines are paragraphs."""
    sections: list[Section] = []
    title, level = "Report", 2
    blocks: list[Block] = []
    paragraph: list[str] = []
    table: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append(Text(" ".join(paragraph), markup=True))
            paragraph.clear()
        if table:
            rows = [_cells(line) for line in table if not re.fullmatch(r"\|?[\s|:-]+\|?", line.strip())]
            blocks.append(TableBlock(Table(rows[0], rows[1:])))
            table.clear()

    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            if paragraph:
                flush()
            table.append(stripped)
            continue
        if table:
            flush()
        heading = re.match(r"^(#{1,6})\s+(.*)$", stripped)
        image = _IMAGE.match(stripped)
        if heading:
            flush()
            if blocks:
                sections.append(Section(title, tuple(blocks), level))
            title, level, blocks = heading.group(2), max(2, len(heading.group(1))), []
        elif image:
            flush()
            name = image.group(2)
            if name.endswith(".png") and store.exists(name):
                blocks.append(Image(image.group(1), store.read_bytes(name)))
        elif not stripped:
            flush()
        elif stripped.startswith("- "):
            flush()
            blocks.append(Text("• " + stripped[2:], markup=True))
        else:
            paragraph.append(stripped)
    flush()
    if blocks:
        sections.append(Section(title, tuple(blocks), level))
    return sections


def _nested(value: Any) -> bool:
    """A list of records or a mapping of records: a table of its own."""
    items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
    return bool(items) and all(isinstance(v, dict) for v in items)


def _records(rows: list[tuple[str | None, dict[str, Any]]]) -> Table:
    flat = [(key, flatten(row)) for key, row in rows]
    columns = list(dict.fromkeys(k for _, f in flat for k in f))
    keyed = any(key is not None for key, _ in flat)
    return Table((["key"] if keyed else []) + columns,
                 [([key or ""] if keyed else []) + [cell_text(f.get(c)) for c in columns] for key, f in flat])


def data_blocks(title: str, data: dict[str, Any]) -> list[Block]:
    """A JSON object as tables: its plain fields in one field/value table, then each list or mapping of
    records as a table of its own (titled by its path), recursively."""
    plain = {k: v for k, v in data.items() if not _nested(v) and not isinstance(v, dict)}
    mappings = {k: v for k, v in data.items() if isinstance(v, dict) and not _nested(v)}
    blocks: list[Block] = []
    rows = [[key, cell_text(value)] for key, value in flatten(plain).items()]
    if rows:
        blocks.append(TableBlock(Table(["field", "value"], rows), title=title))
    for key, value in data.items():
        path = f"{title}.{key}"
        if _nested(value):
            pairs = [(None, v) for v in value] if isinstance(value, list) else list(value.items())
            blocks.append(TableBlock(_records(pairs), title=path))
        elif key in mappings:
            blocks += data_blocks(path, value)
    return blocks


def summary_section(summary: BaseModel, file: str) -> Section:
    """Every field of a typed summary, folded (the report above shows what matters first)."""
    return Section(f"Everything in {file}", tuple(data_blocks("summary", summary.model_dump(mode="json"))),
                   folded=True)
