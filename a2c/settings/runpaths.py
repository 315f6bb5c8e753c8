"""Where a run's folder may be: `name` names a folder under `runs/` and cannot leave it, `output` is any
folder, written in its normal form.

A name is used as a path (`runs/<name>`), so `name: ../../x` put a run, and what `--force` deletes, outside
`runs/`. Both are normalised (`a//b/./c/` → `a/b/c`), so the run folder a config names is the one its
messages name and the same for equal spellings.
"""

from __future__ import annotations

import os
import posixpath

RUNS = "runs"


def run_name(name: str) -> str:
    """`name` normalised; ValueError (for a config validator) when it is empty or leaves `runs/`."""
    normal = posixpath.normpath(name.strip().replace("\\", "/")) if name.strip() else ""
    if normal in ("", ".") or normal == ".." or normal.startswith(("../", "/")) or ":" in normal[:2]:
        raise ValueError(f"name {name!r} must name a folder inside {RUNS}/ (e.g. table2 or paper/table2); "
                         "to write the run elsewhere, set `output`")
    return normal


def run_output(output: str) -> str:
    """`output` normalised (`~` expanded); ValueError when it is empty."""
    if not output.strip():
        raise ValueError("output is empty: name the run folder (or leave `output` out for runs/<name>)")
    return os.path.normpath(os.path.expanduser(output.strip()))
