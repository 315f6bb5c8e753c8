"""Text normalisation shared by lexical metrics and the `exact` judge, so both compare the same strings."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")


def _is_punctuation(char: str) -> bool:
    # Unicode categories P* (punctuation) and S* (symbols such as `$` or `+` stay: they carry meaning)
    return unicodedata.category(char).startswith("P")


def normalize(text: str) -> str:
    """NFKC-fold, casefold, drop punctuation and collapse whitespace.

    Answers like "Paris." and " paris" must count as the same answer; NFKC first so full-width and
    ligature forms fold before casefolding, and punctuation becomes a space so "well-known" → "well known".
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    spaced = "".join(" " if _is_punctuation(ch) else ch for ch in folded)
    return _SPACE.sub(" ", spaced).strip()
