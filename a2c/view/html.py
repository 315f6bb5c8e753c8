"""One self-contained HTML file from the view data: the template, style and page script (package
resources) with the data inlined.

The list data and the overview are plain JSON in the page, read at once. Item pages, the bulk of a large
run, are JSON compressed with zlib in chunks of `CHUNK` items and base64-encoded, each in a script element
of its own; the page script inflates a chunk (`DecompressionStream`) only when one of its items is opened,
so an 817-question run opens and filters without decoding every page first.
"""

from __future__ import annotations

import base64
import html
import json
import zlib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from a2c.display.viewdata import Column, Heatmap, Image, ItemView, Section, TableBlock, Text

CHUNK = 25  # item pages per compressed chunk


def _resource(name: str) -> str:
    return resources.files("a2c.view").joinpath(name).read_text(encoding="utf-8")


def _round(value: float) -> float:
    return round(value, 4)


def block_json(block: TableBlock | Heatmap | Text | Image) -> dict[str, Any]:
    if isinstance(block, TableBlock):
        return {"kind": block.kind, "title": block.title, "header": block.table.header,
                "rows": block.table.rows, "marks": list(block.marks)}
    if isinstance(block, Heatmap):
        return {"kind": block.kind, "title": block.title, "labels": list(block.labels),
                "values": [[_round(v) for v in row] for row in block.values],
                "clusters": list(block.clusters), "low": block.low, "high": block.high}
    if isinstance(block, Image):
        return {"kind": block.kind, "alt": block.alt,
                "src": "data:image/png;base64," + base64.b64encode(block.png).decode("ascii")}
    return {"kind": block.kind, "text": block.text, "pre": block.pre, "markup": block.markup}


def sections_json(sections: list[Section] | tuple[Section, ...]) -> list[dict[str, Any]]:
    return [{"title": s.title, "level": s.level, "folded": s.folded,
             "blocks": [block_json(b) for b in s.blocks]} for s in sections]


@dataclass(frozen=True)
class RunPage:
    """What the page shows of one run: its overview, and its items where the task has a view."""

    title: str
    subtitle: str
    overview: list[Section]
    items: ItemView | None
    notes: tuple[str, ...] = ()


def _column(column: Column) -> dict[str, Any]:
    return {"key": column.key, "label": column.label, "kind": column.kind, "group": column.group}


def _compressed(pages: dict[str, Any]) -> str:
    raw = json.dumps(pages, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def _run_json(run: RunPage) -> tuple[dict[str, Any], list[str]]:
    """The run's inlined JSON, and its item pages as compressed chunks (in list order)."""
    items = run.items
    rows = list(items.rows) if items else []
    data = {"title": run.title, "subtitle": run.subtitle, "overview": sections_json(run.overview),
            "notes": [*run.notes, *(items.notes if items else ())], "noun": items.noun if items else "item",
            "columns": [_column(c) for c in items.columns] if items else [], "rows": rows,
            "groups": list(items.groups) if items else [], "chunk_size": CHUNK}
    chunks = []
    for start in range(0, len(rows), CHUNK):
        ids = [str(row["id"]) for row in rows[start:start + CHUNK]]
        chunks.append(_compressed({i: sections_json(items.pages[i]) for i in ids} if items else {}))
    return data, chunks


def _script_safe(text: str) -> str:
    """JSON that cannot end its script element (`</script>`) or open a comment in it."""
    return text.replace("<", "\\u003c")


def render_html(title: str, runs: list[RunPage], comparison: list[Section] | None) -> str:
    """The whole page: no request leaves it (its content security policy allows inline data only)."""
    payloads = [_run_json(run) for run in runs]
    data = {"title": title, "comparison": sections_json(comparison) if comparison else None,
            "runs": [p[0] for p in payloads]}
    pages = "\n".join(f'<script type="application/octet-stream" id="a2c-pages-{r}-{k}">{chunk}</script>'
                      for r, (_, chunks) in enumerate(payloads) for k, chunk in enumerate(chunks))
    inlined = _script_safe(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    text = _resource("template.html")
    for marker, value in (("STYLE", _resource("viewer.css")), ("SCRIPT", _resource("viewer.js")),
                          ("TITLE", html.escape(title)), ("PAGES", pages), ("DATA", inlined)):
        text = text.replace(f"<!--A2C:{marker}-->", value)
    return text
