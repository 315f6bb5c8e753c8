"""Per-token log-probabilities as every backend reports them: the chosen token's at each position, and the
top-k alternatives where asked.

Backends read what their engine or server gives and pass it through `chosen` and `top_k`, so a reply
whose log-probabilities are missing, partial or not numbers (a server that ignores `logprobs`, one that
sends `null` or `NaN` for a position) becomes `None` instead of a crash or a NaN in a sum later. A list
with one bad position is dropped whole: a sequence probability with a gap would be wrong, not rough.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def _number(value: Any) -> float | None:
    """`value` as a float when it is a real log-probability (a finite or minus-infinite number <= 0 within
    rounding), else None; bools are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if math.isnan(number) or number > 1e-6 or number == math.inf:
        return None
    return number


def chosen(values: Any) -> list[float] | None:
    """The chosen tokens' log-probabilities, or None where the list is missing, empty or any entry is
    not a log-probability."""
    if not isinstance(values, list | tuple) or not values:
        return None
    out = [_number(v) for v in values]
    return None if any(v is None for v in out) else [v for v in out if v is not None]


def texts(values: Any, length: int | None) -> list[str] | None:
    """The chosen tokens' texts, or None where any is not a string or their count is not `length`."""
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        return None
    return list(values) if length is not None and len(values) == length else None


def top_k(steps: Any, k: int | None) -> list[dict[str, float]] | None:
    """The top-k per position as `{token: log-probability}`; None for k = 0 or unset (the chosen token
    only), or where a position is not such a mapping of texts or is empty (a server that ignored
    `top_logprobs`)."""
    if not k or not isinstance(steps, list | tuple) or not steps:
        return None
    out = []
    for step in steps:
        if not isinstance(step, Mapping) or not step:
            return None
        numbers = {token: _number(value) for token, value in step.items()}
        if any(v is None or not isinstance(t, str) for t, v in numbers.items()):
            return None
        out.append({token: v for token, v in numbers.items() if v is not None})
    return out


def with_chosen(top: list[dict[str, float]] | None, tokens: list[str] | None,
                logprobs: list[float] | None) -> list[dict[str, float]] | None:
    """`top` with each position's chosen token added where the top-k left it out (a sampled token outside
    the k most probable), so every backend's top-k holds the chosen token, as vLLM's and the chat API's do."""
    if top is None or tokens is None or logprobs is None or len(top) != len(tokens):
        return top
    return [step if token in step else {**step, token: value}
            for step, token, value in zip(top, tokens, logprobs, strict=True)]
