"""The shared checks for outside input: JSON depth and surrogates, blank questions, CSV cells, log lines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.common.untrusted import UntrustedInputError, is_blank, parse_json, printable, spreadsheet_cell


def test_deep_json_is_refused_without_recursion() -> None:
    with pytest.raises(UntrustedInputError, match="deeper than 64"):
        parse_json("[" * 100_000 + "]" * 100_000)
    assert parse_json("[" * 64 + "]" * 64) is not None


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    assert parse_json(json.dumps({"q": "[" * 500})) == {"q": "[" * 500}


def test_lone_surrogate_is_named_by_its_key() -> None:
    with pytest.raises(UntrustedInputError, match=r"messages\.0\.content: a lone UTF-16 surrogate"):
        parse_json('{"messages": [{"content": "a\\ud800b"}]}')
    # a proper pair is one character, accepted
    assert parse_json('"\\ud83d\\ude00"') == "\U0001f600"


def test_malformed_json_is_json_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_json("{")


@pytest.mark.parametrize("text", ["", " ", "\u200b\u200b", "\u00a0\t", "\x00", "\u2060\ufeff", "\u3164"])
def test_blank(text: str) -> None:
    assert is_blank(text)


@pytest.mark.parametrize("text", ["a", "\u200bWhy?", "日本", "0"])
def test_not_blank(text: str) -> None:
    assert not is_blank(text)


@pytest.mark.parametrize(("cell", "shown"), [
    ("=HYPERLINK(x)", "'=HYPERLINK(x)"), ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("@SUM(1)", "'@SUM(1)"), ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"), ("-2-A1", "'-2-A1"),
    ("\tx", "'\tx"), ("\r=1", "'\r=1"), ("-", "'-"), ("-inf", "'-inf"),
    # one signed number is no formula: a report's figures stay numbers
    ("+1", "+1"), ("-2", "-2"), ("-0.012", "-0.012"), ("-1e-5", "-1e-5"),
    ("Paris", "Paris"), (0.5, 0.5), (-1, -1)])
def test_spreadsheet_cell(cell: object, shown: object) -> None:
    assert spreadsheet_cell(cell) == shown


@given(st.text())
def test_printable_has_no_control_characters(text: str) -> None:
    out = printable(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out)
    if not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text):
        assert out == text
