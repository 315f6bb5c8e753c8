"""One process at a time per run folder, and a folder checked writable before any model loads.

Two runs writing one folder leave a mix of both runs' stages that no marker can detect, and a second run
repeats all of the first one's model work; so `a2c run`/`a2c report` hold an exclusive `flock` on a file
inside the folder for as long as they write it. The kernel drops the lock when its holder exits, however
it exits, so a killed run leaves no stale lock behind. The file holds the holder's pid, for the message.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from a2c.common.errors import A2CError

LOCK_FILE = ".a2c.lock"


class RunFolderBusyError(A2CError):
    """Another live a2c process holds the run folder."""


class RunFolderAccessError(A2CError):
    """The run folder cannot be created or written."""


def ensure_writable(run_dir: Path) -> None:
    """Create the folder and prove a file can be written into it (as every stage will): a read-only
    folder or an `output` that names a file fails now, in one line, not after the model stages ran."""
    what = f"run folder {run_dir}"
    hint = "set `output` in the config (or --output) to a folder you can write"
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=run_dir, prefix=".a2c-write-test.")
        os.close(fd)
        os.unlink(probe)
    except FileExistsError:
        raise RunFolderAccessError(f"{what}: is a file, not a folder", hint=hint) from None
    except NotADirectoryError:
        raise RunFolderAccessError(f"{what}: a part of the path is a file, not a folder", hint=hint) from None
    except OSError as exc:
        raise RunFolderAccessError(f"{what}: cannot write there ({exc.strerror or exc})", hint=hint) from None


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 64).decode("ascii", errors="replace").strip()
    return f"pid {text}" if text.isdigit() else "a process whose pid is not written yet"


@contextmanager
def hold_run_folder(run_dir: Path) -> Iterator[None]:
    """Hold the folder's lock for the block, or `RunFolderBusyError` naming the pid that holds it."""
    ensure_writable(run_dir)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderBusyError(
                f"run folder {run_dir} is in use by another a2c run ({_holder(fd)})",
                hint="wait for it to finish, or set `output` (--output) to another folder") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays, so a waiting process never locks an unlinked one
