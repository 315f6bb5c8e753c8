"""Reading the user's text files (configs, presets, datasets, answers) with errors naming the file and line.

Python's own errors for these (`UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 9`,
`IsADirectoryError`, PyYAML's five-line parser reports) name neither the file nor what to do, and arrive as
tracebacks; here each becomes the caller's `A2CError` subclass with `file:line:` in front.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import yaml

from a2c.common.errors import A2CError

# UTF-8 with or without the byte-order mark that spreadsheet programs put in front of a CSV
DEFAULT_ENCODING = "utf-8-sig"


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


def read_text(path: Path, error: type[A2CError], *, what: str = "file", encoding: str = DEFAULT_ENCODING,
              hint: str | None = None) -> str:
    """The whole text of `path`, or `error` naming the file when it is missing, a folder or unreadable, and
    the line and byte offset when it is not `encoding` text (`hint`: what to do then) or holds NULs."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
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
