"""Text normalisation shared by lexical metrics and the `exact` judge, so both compare the same strings."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")


class _PunctuationToSpace(dict[int, int]):
    """`str.translate` table mapping punctuation to a space, filled per code point on first sight, so the
    judges' dataset-wide pass translates in C instead of asking `unicodedata` about every character."""

    def __missing__(self, code: int) -> int:
        # Unicode categories P* (punctuation) become spaces; S* (symbols such as `$` or `+`) stay: they
        # carry meaning
        self[code] = value = ord(" ") if unicodedata.category(chr(code)).startswith("P") else code
        return value


_PUNCTUATION_TO_SPACE = _PunctuationToSpace()


def normalize(text: str) -> str:
    """NFKC-fold, casefold, drop punctuation and collapse whitespace.

    Answers like "Paris." and " paris" must count as the same answer; NFKC first so full-width and
    ligature forms fold before casefolding, and punctuation becomes a space so "well-known" → "well known".
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    spaced = folded.translate(_PUNCTUATION_TO_SPACE)
    return _SPACE.sub(" ", spaced).strip()
