"""Rows of the user's data files (JSONL, CSV, parquet), each with the line it came from.

Every dataset and task loader reads its files through `read_table`, so a malformed file fails the same way
everywhere: one `DatasetError` naming the file and the line (CSV/JSONL) or row (parquet).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2c.common.files import DEFAULT_ENCODING, read_bytes, read_text
from a2c.common.untrusted import UntrustedInputError, parse_json
from a2c.common.wording import plural
from a2c.data.errors import DatasetError

ENCODING_HINT = "set `dataset.encoding` to the file's encoding (e.g. latin-1 or cp1252), or save it as UTF-8"


class MissingColumnError(DatasetError):
    """Columns a data file lacks, with the ones it has, so a command can say how to map them in its own
    terms (the default hint speaks of the dataset config; `a2c probe` names `--column`)."""

    def __init__(self, message: str, *, missing: tuple[str, ...], available: tuple[str, ...]) -> None:
        super().__init__(message, hint="map your column names under `columns:` in the dataset config")
        self.missing, self.available = missing, available


@dataclass(frozen=True)
class Row:
    """One record of a data file: `where` is `file:line` (`file:row N` for parquet), for error messages."""

    where: str
    values: dict[str, Any]


@dataclass(frozen=True)
class Table:
    path: Path
    columns: tuple[str, ...]  # in file order; for JSONL the union of the keys, first-seen order
    rows: list[Row]

    def require(self, *names: str, labels: Mapping[str, str] | None = None) -> None:
        """DatasetError naming the missing columns (with what each was asked for as, from `labels`, e.g.
        `dataset.columns.correct`) and the ones the file has."""
        missing = [n for n in names if n not in self.columns]
        if missing:
            shown = [f"{n!r} ({labels[n]})" if labels and n in labels else repr(n) for n in missing]
            raise MissingColumnError(f"{self.path}: no column {', '.join(shown)}; the file has "
                                     f"{', '.join(map(repr, self.columns)) or 'no columns'}",
                                     missing=tuple(missing), available=self.columns)


def csv_rows(path: Path, text: str) -> Iterator[tuple[int, list[str]]]:
    """Each non-blank row of CSV text with the line it starts on, header first. Quoting is strict: a quote
    left open would otherwise swallow every later row into one cell, and the file would look shorter."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    end = 0
    try:
        for cells in reader:
            start, end = end + 1, reader.line_num
            if any(cell.strip() for cell in cells):  # blank lines are no rows
                yield start, cells
    except csv.Error as exc:  # the row that fails starts right after the last one read
        unclosed = " (a quote opened on this line is never closed)" if "end of data" in str(exc) else ""
        raise DatasetError(f"{path}:{end + 1}: not valid CSV: {exc}{unclosed}") from None


def csv_table(path: Path, text: str) -> Table:
    """The rows of CSV text under its first row's column names; every row must have one cell per column."""
    rows: list[Row] = []
    lines = csv_rows(path, text)
    header = [h.strip() for h in next(lines, (1, []))[1]]
    for start, cells in lines:
        where = f"{path}:{start}"
        if len(cells) != len(header):
            raise DatasetError(f"{where}: the row has {plural(len(cells), 'cell')}, the header "
                               f"{len(header)} (a comma or line break inside an unquoted cell?)")
        rows.append(Row(where, dict(zip(header, cells, strict=True))))
    return Table(path, tuple(header), rows)


def jsonl_table(path: Path, text: str) -> Table:
    """One JSON object per line; each line goes through `parse_json`, so depth and surrogates are bounded.
    Lines end at \n or \r only: a U+2028 inside a JSON string is text, not a line break."""
    rows: list[Row] = []
    columns: dict[str, None] = {}
    for number, line in enumerate(io.StringIO(text, newline=""), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            value = parse_json(line.rstrip("\r\n"))  # with its line break, an error at the end is "column 1"
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})",
                               hint="a JSONL file holds one JSON object per line") from None
        except UntrustedInputError as exc:  # nested too deep, a lone surrogate
            raise DatasetError(f"{where}: {exc}") from None
        except ValueError as exc:  # a number past Python's digit limit
            raise DatasetError(f"{where}: JSON that cannot be read ({exc})",
                               hint="a JSONL file holds one JSON object per line") from None
        if not isinstance(value, dict):
            raise DatasetError(f"{where}: expected a JSON object per line, got {type(value).__name__}")
        columns.update(dict.fromkeys(value))
        rows.append(Row(where, value))
    return Table(path, tuple(columns), rows)


def _read_csv(path: Path, encoding: str) -> Table:
    return csv_table(path, read_text(path, DatasetError, what="CSV file", encoding=encoding,
                                     hint=ENCODING_HINT))


def _read_jsonl(path: Path, encoding: str) -> Table:
    return jsonl_table(path, read_text(path, DatasetError, what="JSONL file", encoding=encoding,
                                       hint=ENCODING_HINT))


def _read_parquet(path: Path, encoding: str) -> Table:
    try:
        import pyarrow.parquet as pq  # optional: the `data` extra
    except ImportError:
        raise DatasetError(f"{path}: reading parquet needs pyarrow (pip install 'a2c[data]'), or save the "
                           "file as CSV or JSONL") from None
    import pyarrow as pa

    data = read_bytes(path, DatasetError, what="parquet file")  # a regular file, within the read limit
    try:
        table = pq.read_table(pa.BufferReader(data))
    except Exception as exc:  # pyarrow raises several types for a damaged file; all mean "not parquet"
        raise DatasetError(f"{path}: not a readable parquet file: {exc}") from None
    return Table(path, tuple(table.column_names),
                 [Row(f"{path}:row {i + 1}", values) for i, values in enumerate(table.to_pylist())])


READERS: dict[str, Callable[[Path, str], Table]] = {
    ".csv": _read_csv, ".jsonl": _read_jsonl, ".parquet": _read_parquet}


def read_table(path: str | Path, encoding: str = DEFAULT_ENCODING) -> Table:
    """The rows of a data file, chosen by its suffix; a file with no rows is an error (an empty run would
    look like a successful one)."""
    path = Path(path)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise DatasetError(f"{path}: unknown data file type {path.suffix or '(no suffix)'!r}; a2c reads "
                           f"{', '.join(READERS)}")
    table = reader(path, encoding)
    if not table.rows:
        raise DatasetError(f"{path}: no rows" + (", only a header" if table.columns else ""))
    return table
