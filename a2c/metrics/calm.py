"""CALM: REVERSE and SIGNAL perturbations of indicator-formatted pairs and their consistencies (SPEC §9).

Inputs look like `Premise: <text> Hypothesis: <text>`: each sentence is introduced by a type indicator and
a separator symbol. REVERSE swaps the sentences together with their indicators; SIGNAL swaps the separator
for other symbols. Both keep the meaning, so a consistent model keeps its prediction.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from a2c.metrics.paired import same_prediction_rate

# our default replacement separators: ten punctuation marks with no meaning of their own in this position
DEFAULT_SIGNAL_SYMBOLS: tuple[str, ...] = ("#", "@", "!", ";", "|", "=", ">", "~", "*", "%")
DEFAULT_INDICATORS: tuple[str, str] = ("Premise", "Hypothesis")


@dataclass(frozen=True)
class IndicatorPair:
    """A parsed `<ind1><sep> text1<gap><ind2><sep> text2` input; `gap` keeps the original spacing/newline."""

    first_indicator: str
    first_text: str
    second_indicator: str
    second_text: str
    separator: str = ":"
    gap: str = " "

    def render(self, separator: str | None = None, *, reverse: bool = False) -> str:
        sep = self.separator if separator is None else separator
        parts = [(self.first_indicator, self.first_text), (self.second_indicator, self.second_text)]
        if reverse:
            parts.reverse()
        (ind1, text1), (ind2, text2) = parts
        return f"{ind1}{sep} {text1}{self.gap}{ind2}{sep} {text2}"


def parse_indicator_pair(
    text: str, indicators: tuple[str, str] = DEFAULT_INDICATORS, separator: str = ":"
) -> IndicatorPair:
    """Split an indicator-formatted input; `ValueError` when it does not have that shape.

    Args:
        text: an input formatted as `<indicator><separator> sentence <indicator><separator> sentence`.
        indicators: the two indicators, in the order the input names them.
        separator: what follows each indicator.

    Returns:
        The two indicators and sentences, with the spacing between them.
    """
    first, second = (re.escape(ind) for ind in indicators)
    sep = re.escape(separator)
    pattern = rf"\s*({first}){sep}\s*(.*?)(\s+)({second}){sep}\s*(.*?)\s*"
    match = re.fullmatch(pattern, text, flags=re.DOTALL)
    if match is None:
        raise ValueError(
            f"input is not formatted as '{indicators[0]}{separator} … {indicators[1]}{separator} …': "
            f"{text[:80]!r}"
        )
    ind1, text1, gap, ind2, text2 = match.groups()
    return IndicatorPair(ind1, text1, ind2, text2, separator, gap)


def reverse_input(text: str, indicators: tuple[str, str] = DEFAULT_INDICATORS, separator: str = ":") -> str:
    """REVERSE: the second sentence (with its indicator) first.

    Args:
        text: an input formatted as `<indicator><separator> sentence <indicator><separator> sentence`.
        indicators: the two indicators, in the order the input names them.
        separator: what follows each indicator.

    Returns:
        The input with its two indicated sentences swapped.
    """
    return parse_indicator_pair(text, indicators, separator).render(reverse=True)


def signal_inputs(
    text: str,
    symbols: Sequence[str] = DEFAULT_SIGNAL_SYMBOLS,
    indicators: tuple[str, str] = DEFAULT_INDICATORS,
    separator: str = ":",
) -> list[str]:
    """SIGNAL: one input per replacement symbol, the separator after both indicators swapped for it.

    Args:
        text: an input formatted as `<indicator><separator> sentence <indicator><separator> sentence`.
        symbols: the replacement separators, one input each (none equal to `separator`).
        indicators: the two indicators, in the order the input names them.
        separator: what follows each indicator.

    Returns:
        One input per symbol, in the order of `symbols`.
    """
    if not symbols:
        raise ValueError("SIGNAL needs at least one replacement symbol")
    if separator in symbols:
        raise ValueError(f"replacement symbols must differ from the original separator {separator!r}")
    pair = parse_indicator_pair(text, indicators, separator)
    return [pair.render(symbol) for symbol in symbols]


def reverse_consistency(original_preds: Sequence[Hashable], reversed_preds: Sequence[Hashable]) -> float:
    """C_R: share of items whose prediction survives REVERSE.

    Args:
        original_preds: the prediction on each original input.
        reversed_preds: the prediction on each input's REVERSE, in the same order.

    Returns:
        C_R in [0, 1].
    """
    return same_prediction_rate(original_preds, reversed_preds)


def signal_consistency(
    original_preds: Sequence[Hashable], signal_preds: Sequence[Sequence[Hashable]], threshold: float = 1.0
) -> float:
    """C_S: share of items whose pass rate over their k SIGNAL variants reaches `threshold` (paper: 1.0).

    The pass-rate comparison is done in exact fractions so that e.g. 7 of 10 meets a threshold of 0.7.

    Args:
        original_preds: the prediction on each original input.
        signal_preds: for each input, the predictions on its SIGNAL variants.
        threshold: the share of an input's variants that must keep its prediction, in (0, 1].

    Returns:
        C_S in [0, 1].
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold={threshold} is outside (0, 1]")
    if len(original_preds) != len(signal_preds):
        raise ValueError(f"{len(original_preds)} original predictions but {len(signal_preds)} SIGNAL rows")
    if not original_preds:
        raise ValueError("no predictions given")
    bar = Fraction(threshold).limit_denominator(10**6)
    passed = 0
    for index, (original, variants) in enumerate(zip(original_preds, signal_preds, strict=True)):
        if len(variants) == 0:
            raise ValueError(f"item {index} has no SIGNAL predictions")
        rate = Fraction(sum(v == original for v in variants), len(variants))
        passed += rate >= bar
    return passed / len(original_preds)
