"""Where a command may write what it was asked for: every `-o`/`--out`/`--output`/`--json` goes through here.

One rule for all of them. A file output replaces an earlier file of that name (rerunning a command
updates its output), but never a file a2c reads back from a run folder (answers, matrices, stage markers,
the config: `a2c view RUN -o RUN/generations.jsonl` would silently destroy the run). A folder output must
be a folder or not exist yet, and a command writes into it only files that are no such run file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from a2c.common.errors import A2CError


class OutputError(A2CError):
    """An output path a command refuses to write: a run's own file, or a file where a folder is meant."""


def _run_file(path: Path) -> Path | None:
    """The run folder whose read-back file `path` is (after following links), or None."""
    from a2c.run.pipeline import MARKERS, read_back_files

    target = path.resolve()
    folder = target.parent
    if folder.name == MARKERS and read_back_files(folder.parent) is not None:
        return folder.parent
    names = read_back_files(folder)
    return folder if names is not None and target.name in names else None


def _file_above(path: Path, flag: str) -> None:
    """OutputError when a folder `path` needs (its nearest existing ancestor) is a file."""
    above = next((p for p in path.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise OutputError(f"{flag} {path}: {above} is a file, not a folder", hint=f"give {flag} another path")


def check_output_file(path: Path, flag: str) -> None:
    """OutputError unless `path` may be written as the file a command was asked for."""
    if path.is_dir():
        raise OutputError(f"{flag} {path}: is a folder, not a file", hint=f"give {flag} a file name")
    _file_above(path, flag)
    run = _run_file(path)
    if run is not None:
        raise OutputError(f"{flag} {path}: a2c reads this file back from the run folder {run}, so it is "
                          "never written over", hint=f"give {flag} a file outside the run's own files")


def check_output_folder(folder: Path, flag: str, names: Iterable[str] = ()) -> None:
    """OutputError unless `folder` is a folder (or does not exist yet) into which the files `names` may
    be written."""
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{flag} {folder}: is a file, not a folder (a2c writes several files into it)",
                          hint=f"give {flag} a new or existing folder")
    _file_above(folder, flag)
    for name in names:
        run = _run_file(folder / name)
        if run is not None:
            raise OutputError(f"{flag} {folder}: would write {name} over the run's own {name}, which a2c "
                              f"reads back from {run}", hint=f"give {flag} a folder of its own")


@contextmanager
def json_list_file(path: Path, head: Mapping[str, Any], key: str) -> Iterator[Callable[[Any], None]]:
    """Write `{**head, key: [items]}` with the bytes `json.dumps(..., indent=1, ensure_ascii=False)` gives,
    an item at a time as the function yielded is called (a long list is never held whole); the file
    replaces `path` only when the block ends without an error (a run folder's own atomic stream)."""
    from a2c.run.store import RunFolder

    text = json.dumps({**head, key: []}, indent=1, ensure_ascii=False)
    count = 0
    with RunFolder(path.parent).streams(path.name) as (out,):
        out.write((text[:text.rindex("[]")] + "[").encode("utf-8"))

        def add(item: Any) -> None:
            nonlocal count
            # the dump's own line breaks only: a string's U+0085 or U+2028 is not one to indent
            dumped = json.dumps(item, indent=1, ensure_ascii=False)
            out.write((("," if count else "") + "\n  " + dumped.replace("\n", "\n  ")).encode("utf-8"))
            count += 1

        yield add
        out.write((("\n ]" if count else "]") + "\n}\n").encode("utf-8"))
