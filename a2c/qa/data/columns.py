"""Which column of a data file holds which part of a record, and turning one row into a `QARecord`.

One mapping serves every source (a local JSONL/CSV/parquet file, a hub dataset, TruthfulQA's hub rows), so
every source checks rows the same way and a bad one fails with `file:line` and the column.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from a2c.common.untrusted import is_blank, parse_json
from a2c.data.errors import DatasetError
from a2c.data.tables import Row, Table
from a2c.qa.data.records import QARecord, split_references, with_best

LIST_FIELDS = ("correct", "incorrect")


class ColumnMap(BaseModel):
    """Record field → column name. `question` must exist; an unset optional field is read from a column of
    its own name when the file has one, a set one must exist. Without an `id` column, ids are
    `<prefix>-<row index>` (counting from 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = Field(None, min_length=1)
    question: str = Field("question", min_length=1)
    best_answer: str | None = Field(None, min_length=1)
    correct: str | None = Field(None, min_length=1)  # a list: JSON list, or text split at `separator`
    incorrect: str | None = Field(None, min_length=1)
    category: str | None = Field(None, min_length=1)

    def resolve(self, table: Table) -> dict[str, str]:
        """Field → column of `table`; a named column the file lacks is a DatasetError naming the field, the
        column and the columns the file has."""
        named = {f: c for f, c in self.model_dump().items() if c is not None}
        table.require(*named.values(), labels={c: f"dataset.columns.{f}" for f, c in named.items()})
        implicit = {f: f for f in type(self).model_fields if f not in named and f in table.columns}
        return {**implicit, **named}


# TruthfulQA's hub layout (`truthfulqa/truthful_qa`, config `generation`): lists instead of `;`-joined cells
TRUTHFULQA_HUB_COLUMNS = ColumnMap(question="question", best_answer="best_answer", correct="correct_answers",
                                   incorrect="incorrect_answers", category="category")


def _text(row: Row, column: str | None) -> str:
    value = row.values.get(column) if column else None
    if value is None or (isinstance(value, float) and math.isnan(value)):  # a null cell (parquet, pandas)
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(f"{row.where}: column {column!r} holds {type(value).__name__} {value!r}, not text")


def _items(row: Row, column: str | None, values: Iterable[Any]) -> tuple[str, ...]:
    items = []
    for value in values:
        if not isinstance(value, str):
            raise DatasetError(f"{row.where}: column {column!r} lists {type(value).__name__} {value!r}; "
                               "list only texts")
        items.append(value.strip())
    return tuple(item for item in items if item)


def _list(row: Row, column: str | None, separator: str) -> tuple[str, ...]:
    """A list cell: a list (JSONL, parquet, hub), a JSON list in text (`["a", "b"]`), or text split at
    `separator`."""
    value = row.values.get(column) if column else None
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, list | tuple):
        return _items(row, column, value)
    if not isinstance(value, str):
        raise DatasetError(f"{row.where}: column {column!r} holds {type(value).__name__} {value!r}; expected "
                           f"a list or text separated by {separator!r}")
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = parse_json(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{row.where}: column {column!r} looks like a JSON list but is not valid JSON "
                               f"({exc.msg}, column {exc.colno})") from None
        except ValueError as exc:  # too deep, a lone surrogate (UntrustedInputError), a number too long
            raise DatasetError(f"{row.where}: column {column!r} looks like a JSON list but cannot be read "
                               f"({exc})") from None
        if isinstance(parsed, list):
            return _items(row, column, parsed)
    return split_references(text, separator)


def record_from_row(row: Row, columns: Mapping[str, str], *, index: int, id_prefix: str,
                    separator: str = ";") -> QARecord:
    """One row as a record, or a DatasetError at `row.where` saying what is wrong. The best answer joins the
    correct references (as TruthfulQA scores it); a row with incorrect references has correct ones too."""
    question = _text(row, columns["question"])
    if is_blank(question):  # zero-width spaces, NBSP, tabs or NUL alone ask nothing
        raise DatasetError(f"{row.where}: empty question (column {columns['question']!r}"
                           f"{', only invisible characters' if question else ''})")
    qid = _text(row, columns.get("id")) if "id" in columns else f"{id_prefix}-{index}"
    if not qid:
        raise DatasetError(f"{row.where}: empty id (column {columns['id']!r})")
    best = _text(row, columns.get("best_answer")) or None
    correct = _list(row, columns.get("correct"), separator)
    incorrect = _list(row, columns.get("incorrect"), separator)
    if best is not None:
        correct = with_best(best, correct)
    if incorrect and not correct:
        where = f"column {columns['correct']!r} is empty" if "correct" in columns \
            else "no `correct` column is mapped"
        raise DatasetError(f"{row.where}: the row has incorrect references but no correct ones ({where}); "
                           "every correctness rule scores against the correct ones, so give them, or "
                           "neither for a question without references")
    return QARecord(id=qid, question=question, best_answer=best, correct=correct, incorrect=incorrect,
                    category=_text(row, columns.get("category")))


def checked_records(table: Table, resolved: Mapping[str, str], *, id_prefix: str, separator: str = ";"
                    ) -> Iterator[tuple[Row, QARecord]]:
    """Each row of `table` with its record, in order; an id used twice is refused naming both rows.

    Args:
        table: the rows.
        resolved: field → column, as `ColumnMap.resolve` gives it.
        id_prefix: ids without an id column are `<prefix>-<row index>`.
        separator: splits a reference list cell that is not a JSON list.

    Returns:
        (row, record) pairs.
    """
    first_seen: dict[str, str] = {}
    for index, row in enumerate(table.rows):
        record = record_from_row(row, resolved, index=index, id_prefix=id_prefix, separator=separator)
        if record.id in first_seen:
            raise DatasetError(f"{row.where}: id {record.id!r} is used twice (first at "
                               f"{first_seen[record.id]})")
        first_seen[record.id] = row.where
        yield row, record


def records_from_table(table: Table, columns: ColumnMap, *, id_prefix: str, separator: str = ";"
                       ) -> list[QARecord]:
    """Every row of `table` as a record, checked: columns first, then each row, then unique ids."""
    return [record for _, record in checked_records(table, columns.resolve(table), id_prefix=id_prefix,
                                                    separator=separator)]
