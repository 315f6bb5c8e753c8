"""What the field's question sets share: where a set's rows come from and how their fields are read.

A set reads the Hugging Face hub by default (its id, configuration and split), or a local copy: the rows
as `datasets` exports them (`.to_json()` writes JSON Lines; `.to_parquet()`), or the set's own original
JSON file where it has one (SQuAD's `data[].paragraphs[].qas[]`, CoQA's `data[]`). Every row is read
through the accessors here, so a missing or mistyped field fails naming the row (`file:line`) and the
field (`answer.aliases`), as the generic loaders do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2c.common.files import DEFAULT_ENCODING, read_text
from a2c.common.untrusted import UntrustedInputError, is_blank, parse_json
from a2c.data.errors import DatasetError
from a2c.data.tables import ENCODING_HINT, Row, Table, jsonl_table, read_table
from a2c.qa.data.own import DatasetSource, hub_table
from a2c.qa.data.records import QARecord

# a set's original JSON file (one document) as rows in its hub layout
OriginalReader = Callable[[Path, Mapping[str, Any]], list[Row]]


def field_value(row: Row, *keys: str) -> Any:
    """The value at `keys` (nested mappings: `answer`, `aliases`), or a DatasetError naming the field."""
    value: Any = row.values
    for depth, key in enumerate(keys):
        if not isinstance(value, Mapping):
            where = ".".join(keys[:depth])
            raise DatasetError(f"{row.where}: field {where!r} holds {type(value).__name__}, not an object "
                               f"with {key!r}")
        if key not in value:
            raise DatasetError(f"{row.where}: no field {'.'.join(keys)!r}; the row has "
                               f"{', '.join(map(repr, value)) or 'no fields'}")
        value = value[key]
    return value


def text_field(row: Row, *keys: str) -> str:
    """A text field that must say something (invisible characters alone count as empty)."""
    value = field_value(row, *keys)
    if not isinstance(value, str):
        raise DatasetError(f"{row.where}: field {'.'.join(keys)!r} holds {type(value).__name__} {value!r}, "
                           "not text")
    if is_blank(value):
        raise DatasetError(f"{row.where}: field {'.'.join(keys)!r} is empty")
    return value.strip()


def id_field(row: Row, *keys: str) -> str:
    """An id: text, or a whole number as some exports write it."""
    value = field_value(row, *keys)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text_field(row, *keys)


def texts_field(row: Row, *keys: str, allow_empty: bool = False) -> list[str]:
    """A list of texts (blanks dropped); an empty list is an error unless `allow_empty`."""
    value = field_value(row, *keys)
    if not isinstance(value, list | tuple):
        raise DatasetError(f"{row.where}: field {'.'.join(keys)!r} holds {type(value).__name__} {value!r}, "
                           "not a list of texts")
    items: list[str] = []
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise DatasetError(f"{row.where}: field {'.'.join(keys)}[{k}] holds {type(item).__name__} "
                               f"{item!r}, not text")
        if not is_blank(item):
            items.append(item.strip())
    if not items and not allow_empty:
        raise DatasetError(f"{row.where}: field {'.'.join(keys)!r} lists no text")
    return items


def distinct(texts: Iterable[str]) -> tuple[str, ...]:
    """The texts in first-seen order, each once."""
    return tuple(dict.fromkeys(texts))


def unique_ids(records: list[tuple[Row, QARecord]]) -> list[QARecord]:
    """The records, or a DatasetError naming both rows of an id used twice (results are keyed by id)."""
    first_seen: dict[str, str] = {}
    for row, record in records:
        if record.id in first_seen:
            raise DatasetError(f"{row.where}: id {record.id!r} is used twice "
                               f"(first at {first_seen[record.id]})")
        first_seen[record.id] = row.where
    return [record for _, record in records]


def local_table(path: Path, encoding: str, original: OriginalReader | None, name: str) -> Table:
    """A local copy's rows: `.jsonl`/`.parquet`/`.csv` as `read_table` reads them; a `.json` file is
    either JSON Lines (what `datasets`' `.to_json()` writes), a JSON list of rows, or the set's original
    layout (one object with `data`)."""
    if path.suffix.lower() != ".json":
        return read_table(path, encoding)
    text = read_text(path, DatasetError, what="JSON file", encoding=encoding, hint=ENCODING_HINT)
    try:
        document = parse_json(text)
    except (ValueError, UntrustedInputError):  # several lines: JSON Lines, checked line by line
        document = None
    if isinstance(document, Mapping) and "data" in document:
        if original is None:
            raise DatasetError(f"{path}: a JSON object with `data`, but {name} has no original JSON layout "
                               "a2c reads; export the hub's rows (`.to_json()`) instead")
        rows = original(path, document)
    elif isinstance(document, list):
        bad = next((k for k, item in enumerate(document) if not isinstance(item, Mapping)), None)
        if bad is not None:
            raise DatasetError(f"{path}: item [{bad}] of the JSON list is {type(document[bad]).__name__}, "
                               "not a row object")
        rows = [Row(f"{path}:[{k}]", dict(item)) for k, item in enumerate(document)]
    else:
        rows = jsonl_table(path, text).rows
    if not rows:
        raise DatasetError(f"{path}: no rows")
    columns = dict.fromkeys(key for row in rows for key in row.values)
    return Table(path, tuple(columns), rows)


def nested_list(value: Any, where: str, field: str) -> list[Any]:
    """A list inside an original JSON document, or a DatasetError at `where` naming the field."""
    if not isinstance(value, list):
        raise DatasetError(f"{where}: field {field!r} holds {type(value).__name__}, not a list")
    return value


def nested_object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DatasetError(f"{where}: {type(value).__name__}, not an object")
    return value


@dataclass(frozen=True)
class FieldSet:
    """One of the field's question sets: its hub id, configuration and split, how one row in the hub's
    layout becomes records (CoQA: one per turn), and its original JSON layout where a2c reads it."""

    name: str  # the registry name (`dataset.name`)
    title: str  # as papers name it
    hub: str  # owner/name on the Hugging Face hub
    config: str | None  # the hub configuration
    split: str  # the split the field evaluates on
    records: Callable[[Row, int], list[QARecord]]  # a row (and its index) → its records
    original: OriginalReader | None = None

    def load(self, source: DatasetSource) -> list[QARecord]:
        """The set's records from a local copy (`source.path`) or, without one, from the hub."""
        if source.path is not None:
            given = [k for k in ("split", "revision") if getattr(source, k) is not None]
            if given:
                named = " and ".join(f"`{k}`" for k in given)
                verb = "applies" if len(given) == 1 else "apply"
                raise DatasetError(f"dataset {self.name!r}: {named} {verb} to the hub's rows only; a local "
                                   f"file is read whole (leave out {named}, or `path`)")
            table = local_table(source.path, source.encoding, self.original, self.title)
        else:
            table = hub_table(self.hub, self.config, source.split or self.split, source.revision)
        return unique_ids([(row, record) for index, row in enumerate(table.rows)
                           for record in self.records(row, index)])


def load_local(field_set: FieldSet, path: str | Path, encoding: str = DEFAULT_ENCODING) -> list[QARecord]:
    """A field set's records from a local copy (tests, scripts)."""
    return field_set.load(DatasetSource(path=Path(path), encoding=encoding))

