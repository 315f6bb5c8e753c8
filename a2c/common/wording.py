"""Counts in messages: "1 answer", "2 answers", never "1 answers"."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and the noun in the number it takes; `many` for irregular plurals ("query", "queries")."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"
