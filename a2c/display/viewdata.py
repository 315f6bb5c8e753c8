"""What a task hands the run viewer (`a2c view`): one row per item for the list, and one page per item.

Task-neutral, like `a2c.display.reporting`: a wing builds an `ItemView` from its own rows (`TaskSpec.view`),
and the viewer (`a2c.view`) turns it into one HTML file without knowing the task. A page is a list of
sections made of four kinds of block (table, heatmap, text, image), so one page script draws the pages
of every task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from a2c.display.reporting import Table, fmt

Cell = str | int | float | bool | None  # a value of the item list: numbers sort as numbers, flags filter


@dataclass(frozen=True)
class Column:
    """A column of the item list. `flag` columns filter (yes / no), `choice` columns offer their values;
    a column with a `group` shows only while that group is picked (e.g. one source of variation)."""

    key: str
    label: str
    kind: Literal["text", "number", "flag", "choice"] = "text"
    group: str | None = None


@dataclass(frozen=True)
class TableBlock:
    """A table; `marks` name a style per row ("" for none: "chosen", "failed", "idk", ...)."""

    kind: ClassVar[str] = "table"
    table: Table
    marks: tuple[str, ...] = ()
    title: str = ""


@dataclass(frozen=True)
class Heatmap:
    """An agreement matrix with its answers as labels, and the cluster each answer fell into."""

    kind: ClassVar[str] = "heatmap"
    title: str
    labels: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    clusters: tuple[int, ...] = ()
    low: float = 0.0
    high: float = 1.0


@dataclass(frozen=True)
class Text:
    """A paragraph; `markup` allows the report's inline marks (`code`, **bold**)."""

    kind: ClassVar[str] = "text"
    text: str
    pre: bool = False
    markup: bool = False


@dataclass(frozen=True)
class Image:
    kind: ClassVar[str] = "image"
    alt: str
    png: bytes


Block = TableBlock | Heatmap | Text | Image


@dataclass(frozen=True)
class Section:
    title: str
    blocks: tuple[Block, ...]
    level: int = 2  # heading level: 2 for a part of a page, 3 for a part of a part
    folded: bool = False  # shown closed, opened on a click (long reference material)


@dataclass(frozen=True)
class ItemView:
    """The item list and the item pages of one run. `rows[i]["id"]` keys `pages`; `groups` are the
    column groups the list switches between (the first is shown first)."""

    noun: str  # what an item is called: "question", "item"
    columns: tuple[Column, ...]
    rows: tuple[dict[str, Cell], ...]
    pages: Mapping[str, tuple[Section, ...]]
    groups: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())  # shown above the list (e.g. why references are missing)


def flatten(value: Any, prefix: str = "") -> dict[str, Cell]:
    """A JSON value (a model's `model_dump(mode="json")`) as dotted keys → scalars; lists of scalars are
    joined, so every leaf is one cell. Lets tables follow whatever fields a model holds."""
    if isinstance(value, dict):
        out: dict[str, Cell] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            return {prefix: ", ".join(cell_text(v) for v in value)}
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}.{i}" if prefix else str(i)))
        return out
    return {prefix: value}


def cell_text(value: Cell) -> str:
    """A cell as tables print it: floats with 3 decimals, None as `n/a`, flags as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) or value is None:
        return fmt(value)
    return str(value)
