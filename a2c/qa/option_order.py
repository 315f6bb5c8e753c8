"""In which order a rank prompt lists its options: the same order in every prompt, or one that moves.

Small models tend to pick the option at a given position (often the first) whatever it says. When every
rank prompt of a question lists the candidates in the order they were first seen, that bias elects the
first answer, and the vote counts it once per prompt. Moving the options from prompt to prompt turns a
pick by position into a pick spread over the candidates, which the vote then outweighs.

- `fixed`: first-seen order in every prompt (the paper's prompts, and the default);
- `shuffled`: a permutation per prompt, drawn from a digest of the run's seed, the question, the source and
  the prompt's slot, so a rerun shows the same order (and the request cache recognises the prompt);
- `cyclic`: first-seen order rotated by the prompt's slot: over n slots of n options each option is listed
  first exactly once.

The "don't know" option is not one of the permuted options: it is always listed last.
This module loads without the rank prompts' own (the config reads `OptionOrder`).
"""

from __future__ import annotations

import hashlib
from typing import Literal, get_args

__all__ = ["OPTION_ORDERS", "OptionOrder", "shown_order"]

OptionOrder = Literal["fixed", "shuffled", "cyclic"]
OPTION_ORDERS: tuple[OptionOrder, ...] = get_args(OptionOrder)


def shown_order(n: int, order: OptionOrder, *, seed: int, question: str, source: str,
                slot: int) -> tuple[int, ...]:
    """The first-seen indices of `n` options in the order one rank prompt lists them.

    Args:
      n: how many options (candidates after merging duplicates; "don't know" not counted).
      order: `fixed`, `shuffled` or `cyclic` (see the module's docstring).
      seed: the run's A2C seed; with `question`, `source` and `slot` it fixes a `shuffled` order.
      question: the question as the dataset holds it (not the paraphrase the prompt shows).
      source: `paraphrase` or `temperature`, whose slots are counted apart.
      slot: the prompt's slot within its source; `cyclic` rotates by it.

    Returns:
      A permutation of `range(n)`: element k is the first-seen index of the option shown as number k + 1.
    """
    if order not in OPTION_ORDERS:
        raise ValueError(f"option order {order!r} is not one of {', '.join(OPTION_ORDERS)}")
    if order == "fixed" or n < 2:
        return tuple(range(n))
    if order == "cyclic":
        return tuple((slot + k) % n for k in range(n))
    # sorting by a digest per option is a uniform permutation defined by sha256 alone: no generator whose
    # algorithm could change between Python versions, no process-salted hash()
    keys = [hashlib.sha256(repr((seed, "option-order", question, source, slot, i)).encode()).digest()
            for i in range(n)]
    return tuple(sorted(range(n), key=keys.__getitem__))
