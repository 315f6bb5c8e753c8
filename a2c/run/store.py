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
import math
import os
import re
import struct
import zipfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from a2c.run.itemrows import ItemRows
from a2c.run.runfiles import MatricesFile, MatrixKey, MatrixSet, R, RowsFile, RunFileError
from a2c.system.faults import environment_fault

# a stream is written beside its file under this name and renamed into place when it is complete
_TEMP = re.compile(r"\.(?P<name>.+)\.\d+\.[0-9a-f]{8}\.tmp")


def _temp_name(name: str) -> str:
    return f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def streamed_name(temp: str) -> str | None:
    """The file a stream's temporary name is for (None: not such a name), so a folder can recognise the
    half-written stream a killed process left."""
    match = _TEMP.fullmatch(temp)
    return None if match is None else match["name"]

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

    @contextmanager
    def streams(self, *names: str) -> Iterator[list[BinaryIO]]:
        """Handles to write the files through, replaced together when the block ends without an error and
        left as they were when it raises (a folder streams them to disk, so no file is held whole)."""
        buffers = [io.BytesIO() for _ in names]
        yield list(buffers)
        for name, buffer in zip(names, buffers, strict=True):
            self.write_bytes(name, buffer.getvalue())

    def write_stream(self, name: str, write: Callable[[BinaryIO], object]) -> None:
        """Replace the file with what `write` writes to the handle it is given."""
        with self.streams(name) as (handle,):
            write(handle)

    def open_bytes(self, name: str) -> BinaryIO:
        """The file opened for reading (a folder's from disk, so it is read only where it is asked)."""
        return io.BytesIO(self.read_bytes(name))

    @contextmanager
    def item_rows(self, file: RowsFile[R], items: Sequence[str]) -> Iterator[ItemRows[R]]:
        """The file's rows by item id, read a chunk of items at a time (`a2c.run.itemrows`)."""
        with self.open_bytes(file.name) as handle:
            yield ItemRows(file, handle, self.where(file.name), items)

    def read_rows(self, file: RowsFile[R]) -> list[R]:
        return list(self.iter_rows(file))

    def iter_rows(self, file: RowsFile[R]) -> Iterator[R]:
        """The file's rows one at a time: a reader that keeps only what it needs of each holds no more."""
        return file.parse(self.read_text(file.name).split("\n"), self.where(file.name))

    def write_rows(self, file: RowsFile[R], rows: Iterable[R]) -> None:
        """Write the rows as they come (a generator of rows is never held whole)."""
        self.write_stream(file.name, partial(append_rows, file, rows=rows))

    def read_matrices(self, file: MatricesFile, items: set[str] | None = None) -> MatrixSet:
        """The file's matrices; with `items`, only those of these item ids (the others are not inflated)."""
        with self.matrix_reader(file) as reader:
            return reader.read(items)

    def _open_npz(self, name: str) -> Any:
        return np.load(io.BytesIO(self.read_bytes(name)), allow_pickle=False)

    @contextmanager
    def matrix_reader(self, file: MatricesFile) -> Iterator[MatrixReader]:
        """The npz kept open to read matrices as they are needed, so a stage that works a chunk of questions
        at a time holds only that chunk's (a folder's npz is read from disk member by member, never whole)."""
        where = self.where(file.name)
        try:
            data = self._open_npz(file.name)
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise RunFileError(f"{where}: not an npz of matrices ({exc})") from None
        with data:
            yield MatrixReader(file, where, data)

    def write_matrices(self, file: MatricesFile, matrices: MatrixSet) -> None:
        with self.matrix_writer(file) as write:
            write(matrices)

    @contextmanager
    def matrix_writer(self, file: MatricesFile) -> Iterator[Callable[[MatrixSet], None]]:
        """A function that adds matrices to the npz as they are made (a chunk of questions at a time), so
        a large run's matrices are never all in memory; the file is replaced when the block ends."""
        with self.streams(file.name) as (handle,), \
                zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
            yield lambda matrices: _add_to_npz(archive, matrices.arrays())


class MatrixReader:
    """The matrices of an open npz, read on demand: by item ids (`read`) or one at a time (`[key]`).
    Members are read from the archive (`NpzFile.zip`) and parsed by `npy_array`, not by `NpzFile[key]`."""

    def __init__(self, file: MatricesFile, where: str, data: Any) -> None:
        self._file, self._where, self._data = file, where, data
        self._members: list[zipfile.ZipInfo] = data.zip.infolist()  # in the order of `data.files`
        self._by_item: dict[str, list[int]] = {}  # item id → positions of its keys in the file
        for position, key in enumerate(data.files):
            self._by_item.setdefault(key.split("|", 2)[-1], []).append(position)

    def _arrays(self, members: Iterable[tuple[str, zipfile.ZipInfo]]) -> MatrixSet:
        try:
            arrays = {name: npy_array(member_bytes(self._data.zip, info)) for name, info in members}
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise RunFileError(f"{self._where}: not an npz of matrices ({exc})") from None
        return MatrixSet.from_arrays(arrays, self._where, self._file.sets)

    def read(self, items: set[str] | None = None) -> MatrixSet:
        """The matrices of these item ids (None: all), in the file's order."""
        files = self._data.files
        positions = range(len(files)) if items is None else \
            sorted(k for item in items for k in self._by_item.get(item, ()))
        return self._arrays((files[k], self._members[k]) for k in positions)

    def __getitem__(self, key: MatrixKey) -> np.ndarray:
        name = "|".join(key)
        for member in (f"{name}.npy", name):  # as `NpzFile` finds it
            try:
                info = self._data.zip.getinfo(member)
            except KeyError:
                continue
            return self._arrays([(name, info)])[key]
        raise KeyError(key)


_LOCAL_HEADER = struct.Struct("<4s22xHH")  # a zip member's local header: signature, name and extra lengths


def member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's uncompressed bytes, read straight from the archive's file: one seek, one read and one
    inflate, its CRC checked as `ZipFile.read` checks it. Why not `ZipFile.read`: it builds a file object per
    member, which cost a run's matrices (eight members per question) more than inflating them; members that
    are neither stored nor deflated, or are encrypted, go through it."""
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 0x1:
        return archive.read(info)
    handle = archive.fp
    if handle is None:
        raise ValueError("the archive is closed")
    handle.seek(info.header_offset)
    header = handle.read(_LOCAL_HEADER.size)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header) if len(header) == _LOCAL_HEADER.size \
        else (b"", 0, 0)
    if signature != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header of member {info.filename!r}")
    handle.seek(name_length + extra_length, os.SEEK_CUR)
    data = handle.read(info.compress_size)
    if info.compress_type == zipfile.ZIP_DEFLATED:
        try:
            data = zlib.decompress(data, -zlib.MAX_WBITS)
        except zlib.error as exc:
            raise zipfile.BadZipFile(f"member {info.filename!r} does not inflate ({exc})") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"bad CRC or size of member {info.filename!r}")
    return data


def append_rows(file: RowsFile[R], handle: BinaryIO, rows: Iterable[R]) -> None:
    """Write `rows` as lines of `file` to an open handle (of `Store.streams`)."""
    for line in file.lines(rows):
        handle.write(line.encode("utf-8"))


# the header `np.lib.format.write_array` gives a C-ordered array of a plain dtype (version 1.0)
_NPY_HEADER = re.compile(rb"\{'descr': '([<>|=][a-z]\d+)', 'fortran_order': False, "
                         rb"'shape': \(([\d, ]*)\), \} *\n")


def npy_array(data: bytes) -> np.ndarray:
    """The array of a .npy member's bytes. Why not `np.load`: numpy reads each header with `ast.literal_eval`,
    which a run's matrices (eight members per question) spent most of their reading time on; the headers
    numpy writes for plain C-ordered arrays are matched here instead, anything else goes to numpy."""
    if data[:8] == b"\x93NUMPY\x01\x00":
        end = 10 + int.from_bytes(data[8:10], "little")
        header = _NPY_HEADER.fullmatch(data, 10, end)
        if header is not None:
            shape = tuple(int(n) for n in header[2].split(b",") if n.strip())
            dtype = np.dtype(header[1].decode("ascii"))
            count = math.prod(shape)
            if len(data) - end == count * dtype.itemsize:
                return np.frombuffer(data, dtype, count, offset=end).reshape(shape).copy()  # writable
    return np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)


def _add_to_npz(archive: zipfile.ZipFile, arrays: Mapping[str, np.ndarray]) -> None:
    """What `np.savez_compressed` writes, but with fixed timestamps: the same matrices give the same bytes."""
    for name, array in arrays.items():
        info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as handle:
            np.lib.format.write_array(handle, np.asanyarray(array), allow_pickle=False)


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
        self.write_stream(name, lambda handle: handle.write(data))

    def _open_npz(self, name: str) -> Any:
        try:
            return np.load(self.file(name), allow_pickle=False)
        except FileNotFoundError:
            raise RunFileError(f"{self.file(name)}: missing") from None

    @contextmanager
    def streams(self, *names: str) -> Iterator[list[BinaryIO]]:
        targets = [self.file(name) for name in names]
        tmps: list[str] = []
        current = targets[0]  # the file an OSError is about: being opened or replaced, else the first
        try:
            with ExitStack() as stack:
                handles = []
                for current in targets:
                    current.parent.mkdir(parents=True, exist_ok=True)
                    # not mkstemp: its files are 0600 whatever the umask, and a run's files are shared (a
                    # report to mail, a folder on a group server); none holds a secret (keys stay in the
                    # environment)
                    tmps.append(str(current.parent / _temp_name(current.name)))
                    fd = os.open(tmps[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                    handles.append(stack.enter_context(os.fdopen(fd, "wb", buffering=1 << 20)))
                current = targets[0]
                yield handles
            for tmp, current in zip(tmps, targets, strict=True):
                os.replace(tmp, current)
        except OSError as exc:  # a full disk or a read-only folder: named here, where the file is known
            fault = environment_fault(exc, current)
            if fault is None:
                raise
            raise fault from None
        finally:
            for tmp in tmps:
                if os.path.exists(tmp):
                    os.unlink(tmp)

    def digest(self, name: str) -> str | None:
        """sha256 of the file, read in blocks (a large file is never held whole)."""
        try:
            with self.file(name).open("rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def iter_rows(self, file: RowsFile[R]) -> Iterator[R]:
        return file.parse(self._lines(file.name), self.where(file.name))

    def open_bytes(self, name: str) -> BinaryIO:
        try:
            return self.file(name).open("rb")
        except FileNotFoundError:
            raise RunFileError(f"{self.file(name)}: missing") from None

    def _lines(self, name: str) -> Iterator[str]:
        """The file's lines as text, read as they are parsed; bytes that are not UTF-8 are a
        `RunFileError` naming the line."""
        try:
            handle = self.file(name).open("rb")
        except FileNotFoundError:
            raise RunFileError(f"{self.file(name)}: missing") from None
        with handle:
            for number, line in enumerate(handle, start=1):
                try:
                    yield line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise RunFileError(f"{self.file(name)}:{number}: not UTF-8 ({exc.reason})") from None

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
