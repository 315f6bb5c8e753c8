"""Faults of the machine rather than of a2c or its input: a full disk, a read-only or forbidden folder, no
memory left. They are the user's to fix, so they end like any user error (one line naming the file, a
hint, exit 2) rather than as a2c's "unexpected error" (exit 1).

`environment_fault` turns such an exception into that error; writers that know the file call it with the
path (an OSError from `write()` names none), and the CLI calls it for whatever reaches it unconverted.
A GPU out of memory is such a fault too (`gpu_memory_fault`): its line names the batch size to lower.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping

from a2c.common.errors import A2CError

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


def gpu_memory_fault(exc: BaseException,
                     batch_sizes: Mapping[str, int] | None = None) -> EnvironmentFault | None:
    """CUDA out of memory (`torch.OutOfMemoryError` is a RuntimeError; vLLM and older torch raise a plain
    one saying so) as one line naming the batch sizes to lower, with their values where the caller knows
    them (`{"generator.batch_size": 256}`); None for anything else. torch is not imported to tell."""
    if not isinstance(exc, RuntimeError) or "out of memory" not in str(exc).lower():
        return None
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    named = ", ".join(f"`{key}` (now {value})" for key, value in (batch_sizes or {}).items())
    lower = named or "`generator.batch_size`"
    return EnvironmentFault(f"the GPU ran out of memory ({first})",
                            hint=f"lower {lower} (or a model judge's `batch_size`) and rerun; {_RESUME}")
