"""Where a run's files live: a folder on disk (`RunFolder`) or memory (`MemoryStore`).

Stages, the report and the decoding wrapper see only `Store`: typed rows and matrices in and out, built on
a few byte-level primitives, so the same stage code runs an experiment into a folder and a probe in memory.
Files are written whole and atomically, and their bytes are deterministic (the npz too), so a file's
digest changes only when its content does: the runner re-runs a stage when a file it read has changed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from a2c.faults import environment_fault
from a2c.runfiles import MatricesFile, MatrixSet, R, RowsFile, RunFileError


class Store(ABC):
    """The files of one run, by name (`stages/variation.json` for a file in a subfolder)."""

    @abstractmethod
    def read_bytes(self, name: str) -> bytes:
        """The file's content; a missing file is a `RunFileError`."""

    @abstractmethod
    def write_bytes(self, name: str, data: bytes) -> None:
        """Replace the file in one step: a reader sees the old content or the new, never a part."""

    @abstractmethod
    def exists(self, name: str) -> bool: ...

    @abstractmethod
    def delete(self, name: str) -> None:
        """Remove the file if it is there."""

    @abstractmethod
    def where(self, name: str) -> str:
        """The file as messages name it."""

    def digest(self, name: str) -> str | None:
        """sha256 of the content, None for a missing file."""
        return hashlib.sha256(self.read_bytes(name)).hexdigest() if self.exists(name) else None

    def read_text(self, name: str) -> str:
        try:
            return self.read_bytes(name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RunFileError(f"{self.where(name)}: not UTF-8 ({exc.reason} at byte {exc.start})") from None

    def write_text(self, name: str, text: str) -> None:
        self.write_bytes(name, text.encode("utf-8"))

    def read_json(self, name: str) -> Any:
        try:
            return json.loads(self.read_text(name))
        except json.JSONDecodeError as exc:
            raise RunFileError(f"{self.where(name)}:{exc.lineno}: not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise RunFileError(f"{self.where(name)}: JSON nested too deep to read") from None

    def write_json(self, name: str, data: Any) -> None:
        self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def read_rows(self, file: RowsFile[R]) -> list[R]:
        return file.loads(self.read_text(file.name), self.where(file.name))

    def write_rows(self, file: RowsFile[R], rows: Sequence[R]) -> None:
        self.write_text(file.name, file.dumps(list(rows)))

    def read_matrices(self, file: MatricesFile) -> MatrixSet:
        where = self.where(file.name)
        try:
            with np.load(io.BytesIO(self.read_bytes(file.name)), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise RunFileError(f"{where}: not an npz of matrices ({exc})") from None
        return MatrixSet.from_arrays(arrays, where, file.sets)

    def write_matrices(self, file: MatricesFile, matrices: MatrixSet) -> None:
        self.write_bytes(file.name, _npz_bytes(matrices.arrays()))


def _npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """What `np.savez_compressed` writes, but with fixed timestamps: the same matrices give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


@dataclass
class RunFolder(Store):
    """A run folder on disk; every write is a temp file renamed into place, so a kill leaves no half file.
    Files get the mode the umask gives (0644 under the usual 0022), as any other program's would."""

    path: Path

    def file(self, name: str) -> Path:
        return self.path / name

    def read_bytes(self, name: str) -> bytes:
        try:
            return self.file(name).read_bytes()
        except FileNotFoundError:
            raise RunFileError(f"{self.file(name)}: missing") from None

    def write_bytes(self, name: str, data: bytes) -> None:
        target = self.file(name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # not mkstemp: its files are 0600 whatever the umask, and a run's files are shared (a report to
            # mail, a folder on a group server); none holds a secret (keys stay in the environment)
            tmp = str(target.parent / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError as exc:  # a full disk or a read-only folder: named here, where the file is known
            fault = environment_fault(exc, target)
            if fault is None:
                raise
            raise fault from None

    def exists(self, name: str) -> bool:
        return self.file(name).is_file()

    def delete(self, name: str) -> None:
        self.file(name).unlink(missing_ok=True)

    def where(self, name: str) -> str:
        return str(self.file(name))


@dataclass
class MemoryStore(Store):
    """A run held in memory: what `AskToChoose` and `a2c probe` run the stages on."""

    files: dict[str, bytes] = field(default_factory=dict)

    def read_bytes(self, name: str) -> bytes:
        if name not in self.files:
            raise RunFileError(f"{self.where(name)}: missing")
        return self.files[name]

    def write_bytes(self, name: str, data: bytes) -> None:
        self.files[name] = bytes(data)

    def exists(self, name: str) -> bool:
        return name in self.files

    def delete(self, name: str) -> None:
        self.files.pop(name, None)

    def where(self, name: str) -> str:
        return f"<memory>/{name}"
