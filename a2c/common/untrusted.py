"""Checks for text that comes from outside a2c: request bodies, answer files, questions, log lines, cells.

One place for them so `a2c serve`, `a2c score`, `a2c run` and the data loaders refuse the same inputs with
the same words, and every writer escapes the same way.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

MAX_JSON_DEPTH = 64  # nesting of arrays/objects in one JSON document; deeper is refused, never recursed into


class UntrustedInputError(ValueError):
    """Input a2c refuses: the message says what is wrong in one line (callers add the file:line or param)."""


def _depth(text: str) -> int:
    """The deepest nesting of `[`/`{` outside strings, found without parsing (so no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def has_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate: from a JSON `\\ud800`, or from a command-line argument
    that was not UTF-8 (Python keeps its bytes as surrogates); such text cannot be written as UTF-8."""
    return any("\ud800" <= c <= "\udfff" for c in text)


def _surrogate_path(value: Any, path: str = "") -> str | None:
    """Where the first string holding a lone UTF-16 surrogate is (a key or a value), or None."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if has_surrogate(item):
                return where or "(top level)"
        elif isinstance(item, dict):
            for key, inner in item.items():
                if has_surrogate(key):
                    return f"{where}.{key!a}".lstrip(".")
                stack.append((inner, f"{where}.{key}".lstrip(".")))
        elif isinstance(item, list):
            stack.extend((inner, f"{where}.{i}".lstrip(".")) for i, inner in enumerate(item))
    return None


def parse_json(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A JSON document that a2c can store and print: nesting at most `max_depth` deep (deeper input would
    exhaust Python's recursion in the parser) and no lone surrogate (\\ud800 cannot be encoded as UTF-8,
    so it would fail only when written out). Raises UntrustedInputError, or json's own ValueError for
    malformed JSON."""
    if _depth(text) > max_depth:
        raise UntrustedInputError(f"JSON nested deeper than {max_depth} levels")
    value = json.loads(text)
    where = _surrogate_path(value)
    if where is not None:
        raise UntrustedInputError(f"{where}: a lone UTF-16 surrogate (\\ud800-\\udfff) is not text")
    return value


# characters that render as nothing or as plain space: a question made only of these is empty
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me"})
# Hangul fillers and the blank braille pattern: letters by category, blank on screen
_INVISIBLE_EXTRA = frozenset({"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"})


def is_blank(text: str) -> bool:
    """True when `text` shows nothing: only whitespace, NBSP, zero-width or control characters, lone
    combining marks, or filler characters."""
    return all(unicodedata.category(c) in _INVISIBLE_CATEGORIES or c in _INVISIBLE_EXTRA for c in text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: strings starting with = + - @ tab or CR get a leading `'`
    (OWASP's rule against CSV injection); numbers and other values pass unchanged, and so does text that
    is one signed number (`-0.012`, `+0.050`: a report's own figures, which must stay numbers and cannot
    hold a formula)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with control characters (ESC, CR, NUL, ...) written as \\xNN, so a log line cannot move the
    cursor, clear the terminal or forge a second line."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
