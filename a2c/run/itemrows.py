"""A run file's rows read a chunk of items at a time, whatever order the file holds them in.

A stage writes its rows chunk by chunk in its own order (the answers stage: a chunk's paraphrase answers,
then its temperature samples), so the rows of one question are spread over a stretch of the file. Reading
the whole file into per-question sets made the later stages hold every answer of the run at once (about
28 rows per question); `ItemRows` instead records, in one pass, where each line starts and whose it is,
then reads and parses only the lines of the items asked for. The index costs 16 bytes a line.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Sequence
from typing import BinaryIO, Generic

import numpy as np

from a2c.run.runfiles import R, RowsFile, RunFileError

# rows are written by `RowsFile.lines`, whose first key is the item id: read it without parsing the row
_LEADING_ID = re.compile(rb'\{"id": ("(?:[^"\\]|\\.)*")')


class ItemRows(Generic[R]):
    """The rows of `file` grouped by item id, for the ids of `items`; a line of another item is skipped.
    `rows(ids)` gives those items' rows in the file's order (so an item's rows keep theirs)."""

    def __init__(self, file: RowsFile[R], handle: BinaryIO, where: str, items: Sequence[str]) -> None:
        self._file, self._handle, self._where = file, handle, where
        self._position = {item: k for k, item in enumerate(items)}
        offsets, owners, numbers = array("q"), array("i"), array("i")
        offset = 0
        for number, line in enumerate(handle, start=1):
            owner = self._position.get(self._item_of(line, number)) if line.strip() else None
            if owner is not None:
                offsets.append(offset)
                owners.append(owner)
                numbers.append(number)
            offset += len(line)
        by_owner = np.argsort(np.frombuffer(owners, dtype=np.int32), kind="stable")
        self._lines = by_owner.astype(np.int32)  # line indexes, item by item, each item's in file order
        self._starts = np.searchsorted(np.frombuffer(owners, dtype=np.int32)[by_owner],
                                       np.arange(len(items) + 1))
        self._offsets = np.frombuffer(offsets, dtype=np.int64)
        self._numbers = np.frombuffer(numbers, dtype=np.int32)

    def _item_of(self, line: bytes, number: int) -> str:
        match = _LEADING_ID.match(line)
        if match is not None:
            quoted = match[1]
            # without a backslash a JSON string is its characters as they are (UTF-8: ensure_ascii is off)
            return quoted[1:-1].decode("utf-8") if b"\\" not in quoted else str(json.loads(quoted))
        row = self._parse(line, number)  # written otherwise (by hand, by another tool): parse it whole
        return str(row.id)  # type: ignore[attr-defined]  # the rows it is used on are keyed by `id`

    def _parse(self, line: bytes, number: int) -> R:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RunFileError(f"{self._where}:{number}: not UTF-8 ({exc.reason})") from None
        return self._file.parse_line(text, self._where, number)

    def rows(self, ids: Sequence[str]) -> list[R]:
        """The rows of these items (ids the index was not built for have none), in the file's order."""
        owners = sorted({self._position[i] for i in ids if i in self._position})
        if not owners:
            return []
        lines = np.sort(np.concatenate([self._lines[self._starts[k]:self._starts[k + 1]] for k in owners]))
        rows = []
        for line in lines:
            self._handle.seek(int(self._offsets[line]))
            rows.append(self._parse(self._handle.readline(), int(self._numbers[line])))
        return rows

