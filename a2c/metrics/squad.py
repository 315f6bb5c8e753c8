"""SQuAD v1.1's answer normalisation, exact match and token F1 (SPEC §12), for one pair or many answers.

The formulas are those of SQuAD v1.1's official evaluation: `normalize_answer` lower-cases (`str.lower`),
drops every character of `string.punctuation`, drops the words a/an/the and collapses whitespace; EM is
equality of the normalised texts; F1 is the harmonic mean of token precision and recall over the multiset
of shared tokens, 0 when none is shared. Each is the best over the gold aliases. Corners that follow:

- two texts that normalise to nothing score EM 1 and F1 0 (v1.1; SQuAD v2 and CoQA give F1 1 there);
- only ASCII punctuation is dropped: "¿", "—", "。" and emoji stay, as parts of the tokens they touch;
- lower-casing and the articles' word boundaries are Unicode-aware, so "Thé" is kept and "É" matches "é",
  but accents are not stripped ("cafe" ≠ "café") and a non-breaking space separates tokens;
- CJK text without spaces is one token per run of characters, so F1 on it is close to all-or-nothing.

`tests/test_correctness_parity.py` checks every value against the published v1.1 code that lm-eval ships.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

# (answer, gold aliases): the unit the batched scores take
AnswerAliases = tuple[str, Sequence[str]]


def normalize_answer(text: str) -> str:
    """A text as SQuAD v1.1 compares it: lower-cased, ASCII punctuation and a/an/the dropped, whitespace
    collapsed to single spaces (in that order, as the official script applies them).

    Args:
        text: an answer or a gold alias.

    Returns:
        The normalised text; "" when nothing but punctuation, articles and whitespace was there.
    """
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_DROP_PUNCTUATION)).split())


def exact_match(answer: str, gold: str) -> float:
    """1.0 when the two texts normalise to the same string, else 0.0 (two empty texts: 1.0).

    Args:
        answer: the model's answer.
        gold: one gold alias.

    Returns:
        SQuAD v1.1's exact match as a float.
    """
    return float(normalize_answer(answer) == normalize_answer(gold))


def _f1_of_tokens(answer: Sequence[str], gold: Sequence[str]) -> float:
    # v1.1's own operations in its order, so the float is the same to the last bit
    same = sum((Counter(answer) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision = 1.0 * same / len(answer)
    recall = 1.0 * same / len(gold)
    return (2 * precision * recall) / (precision + recall)


def token_f1(answer: str, gold: str) -> float:
    """Token F1 of the normalised texts: 2PR/(P+R) over their shared tokens (counted with multiplicity),
    0.0 when they share none, so also when either text normalises to nothing.

    Args:
        answer: the model's answer.
        gold: one gold alias.

    Returns:
        SQuAD v1.1's F1 in [0, 1].
    """
    return _f1_of_tokens(normalize_answer(answer).split(), normalize_answer(gold).split())


def _checked(pairs: Sequence[AnswerAliases]) -> None:
    for k, (answer, aliases) in enumerate(pairs):
        if not isinstance(answer, str):
            raise TypeError(f"pair {k}: the answer is a {type(answer).__name__}, not a str")
        if isinstance(aliases, str):
            raise TypeError(f"pair {k}: the aliases are one str; give a list of aliases ([{aliases!r}])")
        if not aliases:
            raise ValueError(f"pair {k}: no gold alias; the best over no aliases is undefined")
        if not all(isinstance(a, str) for a in aliases):
            raise TypeError(f"pair {k}: every gold alias must be a str")


def _best_over_aliases(pairs: Sequence[AnswerAliases], score: Callable[[str, str], float]) -> np.ndarray:
    """`max_r score(normalised answer, normalised r)` per pair; each distinct text is normalised once."""
    _checked(pairs)
    normalised: dict[str, str] = {}

    def norm(text: str) -> str:
        found = normalised.get(text)
        if found is None:
            found = normalised[text] = normalize_answer(text)
        return found

    out = np.empty(len(pairs), dtype=np.float64)
    for k, (answer, aliases) in enumerate(pairs):
        a = norm(answer)
        out[k] = max(score(a, norm(r)) for r in aliases)
    return out


def exact_match_scores(pairs: Sequence[AnswerAliases]) -> np.ndarray:
    """EM of each answer: 1.0 when it matches any of its aliases after normalisation.

    Args:
        pairs: (answer, gold aliases) per answer; every alias list non-empty.

    Returns:
        One float per pair, 0.0 or 1.0.

    Raises:
        ValueError: a pair without aliases.
        TypeError: a non-str answer or alias, or aliases given as one str.
    """
    return _best_over_aliases(pairs, lambda a, r: float(a == r))


def token_f1_scores(pairs: Sequence[AnswerAliases]) -> np.ndarray:
    """Token F1 of each answer against its best alias.

    Args:
        pairs: (answer, gold aliases) per answer; every alias list non-empty.

    Returns:
        One float in [0, 1] per pair.

    Raises:
        ValueError: a pair without aliases.
        TypeError: a non-str answer or alias, or aliases given as one str.
    """
    return _best_over_aliases(pairs, lambda a, r: _f1_of_tokens(a.split(), r.split()))
