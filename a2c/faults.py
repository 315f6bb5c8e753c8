"""Faults of the machine rather than of a2c or its input: a full disk, a read-only or forbidden folder, no
memory left. They are the user's to fix, so they end like any user error (one line naming the file, a
hint, exit 2) rather than as a2c's "unexpected error" (exit 1).

`environment_fault` turns such an exception into that error; writers that know the file call it with the
path (an OSError from `write()` names none), and the CLI calls it for whatever reaches it unconverted.
"""

from __future__ import annotations

import errno
import os

from a2c.errors import A2CError

_RESUME = "finished stages and model calls are kept, so a rerun resumes"
# errno → (what happened, what to do)
OS_FAULTS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on the device", f"free some space and rerun ({_RESUME})"),
    errno.EDQUOT: ("disk quota exceeded", f"free some space and rerun ({_RESUME})"),
    errno.EROFS: ("the file system is read-only", "write somewhere writable (`--output DIR` or `output:` "
                  "for a run folder, `cache:` for the request cache)"),
    errno.EACCES: ("permission denied", "make the folder writable for you, or write somewhere else "
                   "(`--output DIR` or `output:`)"),
    errno.EPERM: ("operation not permitted", "make the folder writable for you, or write somewhere else "
                  "(`--output DIR` or `output:`)"),
}
MEMORY_HINT = ("close other programs or use a machine with more memory; for `a2c run`, a smaller "
               "`chunk_size` or `batch_size` lowers the peak")


class EnvironmentFault(A2CError):
    """The machine stopped the work: no space, no permission, no memory."""


def environment_fault(exc: BaseException,
                      path: str | os.PathLike[str] | None = None) -> EnvironmentFault | None:
    """The one-line error for `exc` when it is a machine fault (naming `path`, else the file the exception
    names), None for anything else."""
    if isinstance(exc, MemoryError):
        where = f" while working on {path}" if path is not None else ""
        return EnvironmentFault(f"out of memory{where}", hint=MEMORY_HINT)
    if isinstance(exc, OSError) and exc.errno in OS_FAULTS:
        what, hint = OS_FAULTS[exc.errno]
        named = path if path is not None else exc.filename
        return EnvironmentFault(f"{named}: {what}" if named is not None else what, hint=hint)
    return None
