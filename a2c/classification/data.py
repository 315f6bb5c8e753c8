"""Classification items from a JSONL/CSV/parquet file (or the built-in NLI quickstart set).

Every row goes through `a2c.data.tables.read_table`, and every problem names the row's `file:line`: a
label outside the declared set, a pair without a hypothesis, a derived item whose sources are missing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2c.common.untrusted import is_blank
from a2c.data.errors import DatasetError
from a2c.data.tables import Row, read_table

if TYPE_CHECKING:
    from a2c.classification.config import ClassificationConfig

DERIVATIONS = ("transitive", "additive")
BUILTIN_FILES = {"nli-quickstart": "nli_quickstart.jsonl"}


@dataclass(frozen=True)
class ClassificationItem:
    """One labelled input; `derivation`/`sources` mark an item built from two others (BECEL 001)."""

    id: str
    label: str
    text: str | None = None
    premise: str | None = None
    hypothesis: str | None = None
    bundle: str | None = None  # contrast set (000)
    group: str | None = None  # paraphrase bucket given by the data (003)
    negated_hypothesis: str | None = None
    negated_label: str | None = None
    derivation: str | None = None
    sources: tuple[str, ...] = ()

    @property
    def derived(self) -> bool:
        return self.derivation is not None

    def field(self, name: str) -> str:
        value = getattr(self, name)
        assert isinstance(value, str), name
        return value

    def with_field(self, name: str, text: str) -> ClassificationItem:
        """A copy with text field `name` replaced (by its paraphrase or negation)."""
        changes: dict[str, Any] = {name: text}
        return replace(self, **changes)


def builtin_path(name: str) -> Path:
    return Path(str(resources.files("a2c.resources").joinpath(BUILTIN_FILES[name])))


def _cell(row: Row, column: str) -> str | None:
    value: Any = row.values.get(column)
    if value is None:
        return None
    if isinstance(value, float) and value != value:  # NaN of a parquet/pandas export: an empty cell
        return None
    text = str(value).strip()
    return text or None


def _sources(row: Row, column: str) -> tuple[str, ...]:
    value = row.values.get(column)
    if value is None or value == "":
        return ()
    parts = value if isinstance(value, list) else str(value).split(",")
    return tuple(str(p).strip() for p in parts if str(p).strip())


def _item(row: Row, number: int, config: ClassificationConfig) -> ClassificationItem:
    data = config.dataset
    get = {field: _cell(row, data.column(field)) for field in
           ("id", "text", "premise", "hypothesis", "label", "bundle", "group", "negated_hypothesis",
            "negated_label", "derivation")}
    where = row.where
    for field in ("premise", "hypothesis") if data.input == "pair" else ("text",):
        value = get[field]
        if value is None or is_blank(value):  # zero-width spaces or NUL alone give the model nothing
            invisible = ", only invisible characters" if value else ""
            raise DatasetError(f"{where}: empty {field!r} (column {data.column(field)!r}{invisible})")
    for field in ("label", "negated_label"):
        if get[field] is not None and get[field] not in data.labels:
            raise DatasetError(f"{where}: {field} {get[field]!r} is not in the label set {data.labels}",
                               hint="list every label under `dataset.labels`, or map the file's label "
                                    "column under `dataset.columns`")
    if get["label"] is None:
        raise DatasetError(f"{where}: empty label (column {data.column('label')!r})")
    if get["derivation"] is not None and get["derivation"] not in DERIVATIONS:
        raise DatasetError(f"{where}: derivation {get['derivation']!r} is not one of {list(DERIVATIONS)}")
    sources = _sources(row, data.column("sources"))
    if (get["derivation"] is None) != (not sources) or (sources and len(sources) != 2):
        raise DatasetError(f"{where}: a derived item needs `derivation` and exactly two `sources` ids, "
                           f"got derivation={get['derivation']!r}, sources={list(sources)}")
    if get["negated_hypothesis"] is not None and get["negated_label"] is None:
        flipped = config.suites.becel.negation_labels.get(get["label"] or "")
        if flipped is None:
            raise DatasetError(f"{where}: negated_hypothesis of a {get['label']!r} item needs a "
                               "negated_label (or the label in suites.becel.negation_labels)")
        get["negated_label"] = flipped
    return ClassificationItem(
        id=get["id"] or f"item{number}", label=get["label"] or "", text=get["text"], premise=get["premise"],
        hypothesis=get["hypothesis"], bundle=get["bundle"], group=get["group"],
        negated_hypothesis=get["negated_hypothesis"], negated_label=get["negated_label"],
        derivation=get["derivation"], sources=sources)


def load_items(config: ClassificationConfig) -> list[ClassificationItem]:
    """Every item of the configured file, checked; then the first `limit` (derived ones only with their
    sources kept, so no derived item points at a missing original)."""
    data = config.dataset
    path = builtin_path(data.name) if data.name is not None else Path(data.path or "")
    table = read_table(path, data.encoding)
    needed = ["label", *(("premise", "hypothesis") if data.input == "pair" else ("text",))]
    table.require(*(data.column(f) for f in needed))
    items: list[ClassificationItem] = []
    seen: dict[str, str] = {}
    for number, row in enumerate(table.rows, start=1):
        item = _item(row, number, config)
        if item.id in seen:
            raise DatasetError(f"{row.where}: id {item.id!r} is used twice (first at {seen[item.id]})")
        seen[item.id] = row.where
        items.append(item)
    by_id = {item.id: item for item in items}
    for row, item in zip(table.rows, items, strict=True):
        for source in item.sources:
            if source not in by_id or by_id[source].derived:
                raise DatasetError(f"{row.where}: source {source!r} is not an original item of the file")
    if config.limit is None:
        return items
    kept = items[: config.limit]
    ids = {item.id for item in kept}
    return [item for item in kept if all(s in ids for s in item.sources)]
