"""Reading the user's text files (configs, presets, datasets, answers) with errors naming the file and line.

Python's own errors for these (`UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 9`,
`IsADirectoryError`, PyYAML's five-line parser reports) name neither the file nor what to do, and arrive as
tracebacks; here each becomes the caller's `A2CError` subclass with `file:line:` in front. Every user file is
read by `read_bytes`: only a regular file, and at most `A2C_MAX_FILE_BYTES` (default 1 GiB), so naming
/dev/zero or a FIFO is an error, not a process that fills memory or waits forever.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from a2c.common.errors import A2CError

# UTF-8 with or without the byte-order mark that spreadsheet programs put in front of a CSV
DEFAULT_ENCODING = "utf-8-sig"
# the most bytes a2c reads from one user file; the variable raises (or lowers) it
READ_LIMIT_ENV = "A2C_MAX_FILE_BYTES"
DEFAULT_READ_LIMIT = 1 << 30  # 1 GiB: far past any question set or config, short of exhausting memory
_UNITS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
# a FIFO opened for reading without a writer would block the open itself; a device must not become the
# process's terminal
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
    | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_CHUNK = 1 << 20


def check_encoding(encoding: str) -> str:
    """`encoding` if Python can decode text with it, else ValueError (for a config validator)."""
    try:
        # not b"": Python decodes empty bytes without looking the codec up; base64 and zlib are no text codecs
        b"\n".decode(encoding, errors="ignore")
    except LookupError:
        raise ValueError(f"unknown text encoding {encoding!r} (e.g. utf-8, latin-1, cp1252)") from None
    return encoding


def _shown(encoding: str) -> str:
    """`UTF-8` for both UTF-8 codecs: users know the file's encoding, not Python's BOM-tolerant variant."""
    return "UTF-8" if codecs.lookup(encoding).name in ("utf-8", "utf-8-sig") else encoding


def existing(path: str | Path) -> os.stat_result | None:
    """What is at `path` (links followed), or None when nothing is, or when the text cannot be a path at all:
    a name longer than the file system allows (ENAMETOOLONG), one holding a NUL, a loop of links. A config
    value probed as a path (a model name) is then a name, not the process's `OSError`.

    Args:
        path: the text or path to look at.

    Returns:
        Its `os.stat` result, or None.
    """
    try:
        return os.stat(path)
    except (OSError, ValueError):  # ValueError: an embedded NUL
        return None


def read_limit(error: type[A2CError] = A2CError) -> int:
    """The most bytes one user file may hold: `A2C_MAX_FILE_BYTES` (bytes, or with a unit: `2GiB`,
    `500M`), else 1 GiB; a value that is no size is `error` naming the variable.

    Args:
        error: the caller's error class.

    Returns:
        The limit in bytes.
    """
    given = os.environ.get(READ_LIMIT_ENV, "").strip()
    if not given:
        return DEFAULT_READ_LIMIT
    match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", given)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS or int(match.group(1)) < 1:
        raise error(f"{READ_LIMIT_ENV}={given!r} is no size: give bytes (1073741824) or a number with a unit "
                    "(500M, 2GiB), at least 1")
    return int(match.group(1)) * _UNITS[unit]


def _size(n: int) -> str:
    """Bytes as people read them (`1.5 GiB`, `300 bytes`), for the limit messages."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _kind(mode: int) -> str | None:
    """What a file that is not a regular one is, in a user's words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _not_regular(path: Path, kind: str, what: str) -> str:
    if kind == "a folder":
        return f"{path}: is a folder, not a {what}"
    return f"{path}: is {kind}; the {what} must be a regular file"


def _too_large(path: Path, what: str, limit: int, size: int | None = None) -> str:
    held = f"is {_size(size)}," if size is not None else "holds"
    return (f"{path}: the {what} {held} more than the {_size(limit)} a2c reads from one file; set "
            f"{READ_LIMIT_ENV} (e.g. {READ_LIMIT_ENV}=4GiB) to raise the limit")


def read_bytes(path: Path, error: type[A2CError], *, what: str = "file") -> bytes:
    """The bytes of a user-named file, never more than `read_limit()`: a character device (/dev/zero), a
    FIFO, a socket or a folder is refused without reading (a FIFO without writer would block forever, a
    device would fill memory), so is a file whose size is past the limit; and the read itself stops at
    the limit, for files whose size says 0 (/proc) or that grow while read. Each refusal is `error` on one
    line naming the file.

    Args:
        path: the user's file.
        error: the caller's error class.
        what: what the file is, for the messages.

    Returns:
        The file's bytes.
    """
    limit = read_limit(error)
    try:
        # the path's kind first, so a device is never even opened (opening some has side effects)
        kind = _kind(os.stat(path).st_mode)
        if kind is not None:
            raise error(_not_regular(path, kind, what))
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a FIFO swapped in) refuses a non-blocking open
            raise error(_not_regular(path, "not a regular file", what)) from None
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)  # the file opened, which may not be the one stat saw
        kind = _kind(info.st_mode)
        if kind is not None:
            raise error(_not_regular(path, kind, what))
        if info.st_size > limit:
            raise error(_too_large(path, what, limit, info.st_size))
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if total > limit:
        raise error(_too_large(path, what, limit))  # its size said less (/proc) or it grew
    return b"".join(chunks)


def read_text(path: Path, error: type[A2CError], *, what: str = "file", encoding: str = DEFAULT_ENCODING,
              hint: str | None = None) -> str:
    """The whole text of `path` (read by `read_bytes`: a regular file within the read limit), or `error`
    naming the file, and the line and byte offset when it is not `encoding` text (`hint`: what to do then)
    or holds NULs.

    Args:
        path: the user's file.
        error: the caller's error class, raised with a one-line message naming the file.
        what: what the file is, for the messages ("config file", "CSV file").
        encoding: the text encoding to decode with.
        hint: what to do when the file is not `encoding` text.

    Returns:
        The decoded text.
    """
    data = read_bytes(path, error, what=what)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}:{line}: not {_shown(encoding)} text (byte 0x{data[exc.start]:02x} at offset "
                    f"{exc.start}); is it a binary file or saved in another encoding?", hint=hint) from None
    nul = text.find("\0")
    if nul >= 0:
        raise error(f"{path}:{text.count(chr(10), 0, nul) + 1}: holds a NUL character, so it is a binary "
                    f"file, not a text {what}")
    return text


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with two changes that keep a file meaning what its author wrote:

    - a key given twice in one mapping is an error (PyYAML keeps the last one: a second `generator:` block
      silently replaced the first);
    - only `true`/`false` are booleans, as in YAML 1.2; PyYAML follows YAML 1.1, where `yes`, `no`, `on`
      and `off` are booleans too, so `labels: [yes, no]` became `[True, False]`. They are read as the
      text written; a boolean setting still takes them (pydantic reads "yes"/"no"/"on"/"off" as booleans).
    """

    yaml_implicit_resolvers = {  # noqa: RUF012 (PyYAML's own class-level table, replaced whole)
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # a merge key (<<) may override on purpose; other keys PyYAML checks itself
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key]}); give each key once",
                    key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep)


_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


def node_line(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the deepest YAML node on a key path (the key's own line for a mapping), so an error
    about a value names the line it was written on."""
    node, line = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def parse_yaml(text: str, source: str, error: type[A2CError]) -> tuple[Any, yaml.Node | None]:
    """The data of YAML text and its node tree (which keeps line numbers); a YAML problem is `error` on one
    line, `source:line: not valid YAML: problem`. Read by `_Loader`: duplicate keys are errors, and only
    true/false are booleans."""
    try:
        # _Loader is a SafeLoader: no python/object tags
        return yaml.load(text, Loader=_Loader), yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        context = f" ({exc.context}, line {exc.context_mark.line + 1})" if exc.context and exc.context_mark \
            else ""
        raise error(f"{where}: not valid YAML: {exc.problem or exc.context}{context}") from None
    # ValueError: a scalar YAML cannot convert (2001-13-45 as a date, an int past Python's digit limit);
    # RecursionError: brackets nested thousands deep
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise error(f"{source}: not valid YAML: {exc}") from None
