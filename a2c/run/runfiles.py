"""The typed files of a run folder, task-neutral: a file by name, a JSON-lines file of typed rows, and an
npz of agreement matrices.

A task declares each of its files once with its row type (`RowsFile("generations.jsonl", GenerationRow)`),
so writer and readers cannot drift apart. Unknown fields are ignored (a newer a2c may add some); a missing
or mistyped field is a `RunFileError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from a2c.common.errors import A2CError


class RunFileError(A2CError):
    """A run file that is missing or does not parse: the message names the file and, for rows, the line."""


class Row(BaseModel):
    """One line of a JSON-lines run file."""

    model_config = ConfigDict(frozen=True)


R = TypeVar("R", bound=Row)


@dataclass(frozen=True)
class RunFile:
    """A file of the run folder, by name."""

    name: str


@dataclass(frozen=True)
class RowsFile(RunFile, Generic[R]):
    """A JSON-lines file whose every line is one `row`."""

    row: type[R]

    def dumps(self, rows: Iterable[R]) -> str:
        return "".join(self.lines(rows))

    def lines(self, rows: Iterable[R]) -> Iterator[str]:
        """Each row as its line of the file, one at a time (a writer streams them to disk)."""
        for r in rows:
            yield json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n"

    def loads(self, text: str, where: str) -> list[R]:
        return list(self.parse(text.splitlines(), where))

    def parse(self, lines: Iterable[str], where: str) -> Iterator[R]:
        """The rows of the file's lines, one at a time (blank lines skipped); a bad line is a
        `RunFileError` naming `where` and its line number."""
        for number, line in enumerate(lines, start=1):
            if line.strip():
                yield self.parse_line(line, where, number)

    def parse_line(self, line: str, where: str, number: int) -> R:
        """One line's row; a bad line is a `RunFileError` naming `where` and `number`."""
        try:
            return self.row.model_validate_json(line)
        except ValidationError as exc:
            problems = "; ".join(_problem(e) for e in exc.errors(include_url=False))
            raise RunFileError(f"{where}:{number}: not a {self.row.__name__}: {problems}") from None


def _problem(error: Mapping[str, Any]) -> str:
    key = ".".join(str(p) for p in error["loc"])
    return f"{key}: {error['msg']}" if key else str(error["msg"])


MatrixKey = tuple[str, str, str]  # (judge, set, item id): a QA set is a source of variation


class MatrixLookup(Protocol):
    """Matrices by (judge, set, item id): a `MatrixSet` in memory, or `a2c.run.store.MatrixReader` on a
    file."""

    def __getitem__(self, key: MatrixKey) -> np.ndarray: ...


@dataclass(frozen=True)
class MatrixSet:
    """Agreement matrices keyed (judge, set, item id); on disk an npz whose keys are `judge|set|id`."""

    matrices: Mapping[MatrixKey, np.ndarray]

    def __getitem__(self, key: MatrixKey) -> np.ndarray:
        return self.matrices[key]

    def __iter__(self) -> Iterator[MatrixKey]:
        return iter(self.matrices)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"|".join(key): m for key, m in self.matrices.items()}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], where: str, sets: tuple[str, ...]) -> MatrixSet:
        """Matrices read back from an npz; `sets` are the set names the file may hold."""
        matrices: dict[MatrixKey, np.ndarray] = {}
        for name, m in arrays.items():
            judge, kind, item = [*name.split("|", 2), "", ""][:3]
            if kind not in sets or not judge or not item:
                raise RunFileError(f"{where}: key {name!r} is not judge|set|id with a set in {sets}")
            if m.ndim != 2 or m.shape[0] != m.shape[1]:
                raise RunFileError(f"{where}: {name} has shape {m.shape}, not a square matrix")
            matrices[(judge, kind, item)] = m
        return cls(matrices)


@dataclass(frozen=True)
class MatricesFile(RunFile):
    """An npz of one `MatrixSet` whose set names are `sets`."""

    sets: tuple[str, ...] = ()
